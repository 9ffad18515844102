package refs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// team is a bare server and two clones of it, A and B, each with origin set.
type team struct {
	server     string
	a, b       *refs.Repo
	dirA, dirB string
}

func newTeam(t *testing.T) *team {
	t.Helper()
	base := refstest.Repo(t, map[string]string{"a": "1"})
	tm := &team{server: filepath.Join(t.TempDir(), "server.git")}
	refstest.Git(t, "", "clone", "-q", "--bare", base, tm.server)
	for _, c := range []struct {
		dir  *string
		repo **refs.Repo
	}{{&tm.dirA, &tm.a}, {&tm.dirB, &tm.b}} {
		*c.dir = filepath.Join(t.TempDir(), "clone")
		refstest.Git(t, "", "clone", "-q", tm.server, *c.dir)
		repo, err := refs.Open(*c.dir)
		if err != nil {
			t.Fatal(err)
		}
		*c.repo = repo
	}
	return tm
}

// appendLog appends one entry holding text to id's log in r.
func appendLog(t *testing.T, r *refs.Repo, id refs.ID, text string) plumbing.Hash {
	t.Helper()
	tip, err := r.Ref(id.LogRef())
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Append(context.Background(), id, tip, map[string][]byte{"lease.json": []byte(text)}, "lease "+string(id)+": "+text+"\n")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// setBranch points id's review branch at a new commit on top of where it is
// (or of HEAD) whose message is text.
func setBranch(t *testing.T, r *refs.Repo, id refs.ID, text string) plumbing.Hash {
	t.Helper()
	old, err := r.Ref(id.BranchRef())
	if err != nil {
		t.Fatal(err)
	}
	parent := old
	if parent.IsZero() {
		parent, _ = r.ResolveCommit("HEAD")
	}
	c, err := r.Commit(parent)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.WriteCommit(c.TreeHash, []plumbing.Hash{parent}, text+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Update(context.Background(), "test", refs.RefUpdate{Name: id.BranchRef(), Old: old, New: h}); err != nil {
		t.Fatal(err)
	}
	return h
}

func names(states []refs.RefState) string {
	var out []string
	for _, s := range states {
		out = append(out, s.Name)
	}
	return strings.Join(out, " ")
}

func serverRef(t *testing.T, tm *team, name string) string {
	t.Helper()
	return refstest.Git(t, tm.server, "for-each-ref", "--format=%(objectname)", name)
}

const idX, idY = refs.ID("0123456789ab"), refs.ID("ba9876543210")

func TestPushNeverForces(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	appendLog(t, tm.a, idX, "one")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.b.FetchLeases(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	fromB := appendLog(t, tm.b, idX, "B")
	if err := tm.b.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	appendLog(t, tm.a, idX, "A")
	err := tm.a.PushLeases(ctx, "origin", []refs.ID{idX})
	if !errors.Is(err, refs.ErrPushRejected) || !strings.Contains(err.Error(), "! [rejected]") {
		t.Fatalf("push over B's entry: %v", err)
	}
	if got := serverRef(t, tm, idX.LogRef()); got != fromB.String() {
		t.Fatalf("server log = %s, want B's %s", got, fromB)
	}
}

func TestPushIsAtomic(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	appendLog(t, tm.a, idX, "one")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.b.FetchLeases(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	appendLog(t, tm.b, idX, "B")
	if err := tm.b.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	appendLog(t, tm.a, idX, "A")   // refused: the server moved on
	appendLog(t, tm.a, idY, "new") // acceptable on its own
	if err := tm.a.PushLeases(ctx, "origin", nil); !errors.Is(err, refs.ErrPushRejected) {
		t.Fatalf("push = %v, want ErrPushRejected", err)
	}
	if got := serverRef(t, tm, idY.LogRef()); got != "" {
		t.Fatalf("the server took %s although the push was refused", idY.LogRef())
	}
}

func TestPushShowsTheRemoteHooksReason(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	hook := filepath.Join(tm.server, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'lease 0123456789ab: unsigned receipt' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	appendLog(t, tm.a, idX, "one")
	err := tm.a.PushLeases(ctx, "origin", nil)
	if !errors.Is(err, refs.ErrPushRejected) || !strings.Contains(err.Error(), "remote: lease 0123456789ab: unsigned receipt") ||
		!strings.Contains(err.Error(), "pre-receive hook declined") || strings.Contains(err.Error(), "hint:") {
		t.Fatalf("push = %v", err)
	}
}

func TestPushOfAnUnknownLeaseSendsNothing(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	appendLog(t, tm.a, idX, "one")
	if err := tm.a.PushLeases(ctx, "origin", []refs.ID{idX, idY}); !errors.Is(err, refs.ErrNoLease) {
		t.Fatalf("push = %v, want ErrNoLease", err)
	}
	if got := serverRef(t, tm, idX.LogRef()); got != "" {
		t.Fatalf("the server got %s", idX.LogRef())
	}
}

func TestPushToAnAbsolutePath(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	log := appendLog(t, tm.a, idX, "one")
	if err := tm.a.PushLeases(ctx, tm.server, nil); err != nil {
		t.Fatal(err)
	}
	if got := serverRef(t, tm, idX.LogRef()); got != log.String() {
		t.Fatalf("server log = %q", got)
	}
}

func TestBadRemotesAreRefused(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	appendLog(t, tm.a, idX, "one")
	for _, remote := range []string{"", "-oops", "--upload-pack=touch /tmp/pwned", "server.git", "../server.git", "nosuchremote", "origin\n", "a\x00b"} {
		if err := tm.a.PushLeases(ctx, remote, nil); !errors.Is(err, refs.ErrBadRemote) {
			t.Errorf("PushLeases(%q) = %v", remote, err)
		}
		if _, err := tm.a.FetchLeases(ctx, remote); !errors.Is(err, refs.ErrBadRemote) {
			t.Errorf("FetchLeases(%q) = %v", remote, err)
		}
		if _, err := tm.a.RemoteLeaseIDs(remote); !errors.Is(err, refs.ErrBadRemote) {
			t.Errorf("RemoteLeaseIDs(%q) = %v", remote, err)
		}
	}
	// Fetch keeps what it fetched per remote name, so a path is not enough.
	if _, err := tm.a.FetchLeases(ctx, tm.server); !errors.Is(err, refs.ErrBadRemote) {
		t.Errorf("FetchLeases(path) = %v", err)
	}
}

// A remote configured with a relative path resolves against the top of the
// checkout, as it does for git, whether push and fetch run from there or
// from a subdirectory.
func TestRemoteConfiguredWithARelativePath(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	for _, dir := range []string{tm.dirA, tm.dirB} {
		rel, err := filepath.Rel(dir, tm.server)
		if err != nil {
			t.Fatal(err)
		}
		refstest.Git(t, dir, "remote", "add", "rel", rel)
	}
	log := appendLog(t, tm.a, idX, "one")
	if err := tm.a.PushLeases(ctx, "rel", nil); err != nil {
		t.Fatalf("push to %q: %v", "rel", err)
	}
	if got := serverRef(t, tm, idX.LogRef()); got != log.String() {
		t.Fatalf("server log = %q", got)
	}
	sub := filepath.Join(tm.dirB, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := refs.Open(sub)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := b.FetchLeases(ctx, "rel")
	if err != nil {
		t.Fatalf("fetch from %q in a subdirectory: %v", "rel", err)
	}
	if names(rep.Created) != idX.LogRef() {
		t.Fatalf("fetch created %q", names(rep.Created))
	}
}
