package refs_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

func TestSplitNote(t *testing.T) {
	sep := "\n" + refs.NoteSeparator + "\n"
	for _, c := range []struct {
		name, note string
		want       []string
	}{
		{"a note written once is one text", "summary: ok\n\nsig: AAA\n", []string{"summary: ok\n\nsig: AAA"}},
		{"a merged note is its texts", "a\n" + sep + "b\n", []string{"a", "b"}},
		{"empty texts are left out", sep + "\n" + sep + "b", []string{"b"}},
		{"an empty note has no texts", "", nil},
	} {
		if got := refs.SplitNote([]byte(c.note)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: SplitNote(%q) = %q, want %q", c.name, c.note, got, c.want)
		}
	}
}

func TestFetchMergesNotesSoNothingIsLost(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	head := refstest.Git(t, tm.dirA, "rev-parse", "HEAD")
	refstest.Git(t, tm.dirA, "notes", "--ref=leases", "add", "-m", "summary: from A", "-m", "sig: AAA", head)
	refstest.Git(t, tm.dirA, "notes", "--ref=leases", "add", "-m", "only A annotated the tree", "HEAD^{tree}")
	refstest.Git(t, tm.dirB, "notes", "--ref=leases", "add", "-m", "summary: from B", "-m", "sig: BBB", head)
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	rep, err := tm.b.FetchLeases(ctx, "origin")
	if err != nil || !rep.NotesMerged {
		t.Fatalf("fetch into B: %+v, %v", rep, err)
	}
	want := "summary: from A\n\nsig: AAA\n" + refs.NoteSeparator + "\nsummary: from B\n\nsig: BBB"
	if got := refstest.Git(t, tm.dirB, "notes", "--ref=leases", "show", head); got != want {
		t.Fatalf("merged note:\n%s\nwant:\n%s", got, want)
	}
	if got := refstest.Git(t, tm.dirB, "notes", "--ref=leases", "show", "HEAD^{tree}"); got != "only A annotated the tree" {
		t.Fatalf("A's other note: %q", got)
	}
	parents := refstest.Git(t, tm.dirB, "log", "-1", "--format=%P", "refs/notes/leases")
	if len(strings.Fields(parents)) != 2 {
		t.Fatalf("the notes merge has parents %q, want both sides", parents)
	}

	// B's merge contains A's notes, so B can push it and A fast-forwards to it.
	if err := tm.b.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	rep, err = tm.a.FetchLeases(ctx, "origin")
	if err != nil || rep.NotesMerged || names(rep.FastForwarded) != "refs/notes/leases" {
		t.Fatalf("fetch into A: %+v, %v", rep, err)
	}
	if got := refstest.Git(t, tm.dirA, "notes", "--ref=leases", "show", head); got != want {
		t.Fatalf("A's note after the fetch:\n%s", got)
	}
	if rep, err = tm.b.FetchLeases(ctx, "origin"); err != nil || rep.NotesMerged || names(rep.UpToDate) != "refs/notes/leases" {
		t.Fatalf("fetching again: %+v, %v", rep, err)
	}
}

func TestNotesMergeIsStableAndReadsAnyFanOut(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	head := refstest.Git(t, tm.dirA, "rev-parse", "HEAD")
	refstest.Git(t, tm.dirA, "notes", "--ref=leases", "add", "-m", "zeta from A", head)
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	// B's notes tree uses a fan-out directory, as git does for many notes,
	// and already holds a merged note that includes A's text.
	blob, err := tm.b.WriteBlob([]byte("alpha from B\n" + refs.NoteSeparator + "\nzeta from A\n"))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := tm.b.WriteTreeOrEmpty(plumbing.ZeroHash, []refs.TreeEdit{{Path: head[:2] + "/" + head[2:], Mode: filemode.Regular, Hash: blob}})
	if err != nil {
		t.Fatal(err)
	}
	notes, err := tm.b.WriteCommit(tree, nil, "Notes added by a test\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.b.Update(ctx, "test", refs.RefUpdate{Name: "refs/notes/leases", New: notes}); err != nil {
		t.Fatal(err)
	}
	rep, err := tm.b.FetchLeases(ctx, "origin")
	if err != nil || !rep.NotesMerged {
		t.Fatalf("fetch: %+v, %v", rep, err)
	}
	entries := refstest.Git(t, tm.dirB, "ls-tree", "-r", "--name-only", "refs/notes/leases")
	if entries != head {
		t.Fatalf("merged notes tree holds %q, want one note named %s", entries, head)
	}
	want := "alpha from B\n" + refs.NoteSeparator + "\nzeta from A"
	if got := refstest.Git(t, tm.dirB, "notes", "--ref=leases", "show", head); got != want {
		t.Fatalf("merged note:\n%s\nwant:\n%s", got, want)
	}
}

func TestFetchFromARemoteThatDroppedItsNotes(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	refstest.Git(t, tm.dirA, "notes", "--ref=leases", "add", "-m", "note", "HEAD")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.b.FetchLeases(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	refstest.Git(t, tm.server, "update-ref", "-d", "refs/notes/leases")
	rep, err := tm.b.FetchLeases(ctx, "origin")
	if err != nil || rep.NotesMerged {
		t.Fatalf("fetch: %+v, %v", rep, err)
	}
	if h, _ := tm.b.Ref("refs/remotes/origin/notes/leases"); !h.IsZero() {
		t.Fatalf("remote-tracking notes kept after the remote dropped them")
	}
	if got := refstest.Git(t, tm.dirB, "notes", "--ref=leases", "show", "HEAD"); got != "note" {
		t.Fatalf("B's own notes: %q", got)
	}
}

func TestNotesMergeFansOutManyNotes(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	refstest.Git(t, tm.dirA, "notes", "--ref=leases", "add", "-m", "from A", "HEAD")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	var edits []refs.TreeEdit
	for i := 0; i < 300; i++ {
		blob, err := tm.b.WriteBlob([]byte(strings.Repeat("x", i) + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		edits = append(edits, refs.TreeEdit{Path: blob.String(), Mode: filemode.Regular, Hash: blob})
	}
	tree, err := tm.b.WriteTreeOrEmpty(plumbing.ZeroHash, edits)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := tm.b.WriteCommit(tree, nil, "Notes added by a test\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.b.Update(ctx, "test", refs.RefUpdate{Name: "refs/notes/leases", New: notes}); err != nil {
		t.Fatal(err)
	}
	if rep, err := tm.b.FetchLeases(ctx, "origin"); err != nil || !rep.NotesMerged {
		t.Fatalf("fetch: %+v, %v", rep, err)
	}
	for _, line := range strings.Split(refstest.Git(t, tm.dirB, "ls-tree", "--name-only", "refs/notes/leases"), "\n") {
		if len(line) != 2 {
			t.Fatalf("top-level entry %q of a notes tree with 301 notes, want fan-out directories", line)
		}
	}
	if got := len(strings.Split(refstest.Git(t, tm.dirB, "notes", "--ref=leases", "list"), "\n")); got != 301 {
		t.Fatalf("git notes list shows %d notes, want 301", got)
	}
	if got := refstest.Git(t, tm.dirB, "notes", "--ref=leases", "show", edits[7].Hash.String()); got != "xxxxxxx" {
		t.Fatalf("git notes show through the fan-out: %q", got)
	}
}
