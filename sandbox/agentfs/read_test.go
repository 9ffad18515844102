package agentfs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/tursodatabase/agentfs/sdk/go"

	"github.com/git-lease/git-lease/sandbox"
)

// writeBase makes a base directory from "path:mode:content" lines
// ("path:l:target" for a symlink).
func writeBase(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		parts := strings.SplitN(f, ":", 3)
		p := filepath.Join(dir, parts[0])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if parts[1] == "l" {
			if err := os.Symlink(parts[2], p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var mode os.FileMode = 0o644
		fmt.Sscanf(parts[1], "%o", &mode)
		if err := os.WriteFile(p, []byte(parts[2]), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// listing is a delta's entries, one "kind path [detail]" a line.
func listing(t *testing.T, s *Source) string {
	t.Helper()
	var b strings.Builder
	d := sandbox.Delta{Source: s}
	err := sandbox.Walk(d, func(e sandbox.Entry) error {
		fmt.Fprintf(&b, "%s %s", e.Kind, e.Path)
		switch e.Kind {
		case sandbox.File:
			f, err := sandbox.OpenEntry(d, e)
			if err != nil {
				return err
			}
			content, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %o %q", e.Mode.Perm(), content)
		case sandbox.Symlink:
			fmt.Fprintf(&b, " -> %s", e.Target)
		case sandbox.Dir:
			if e.Opaque {
				b.WriteString(" opaque")
			}
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadsWhatTheGoSDKsOverlayWrote drives the AgentFS Go SDK's own
// OverlayFS through real operations over a base directory and reads the
// database it wrote: each change once, copy-ups left out.
func TestReadsWhatTheGoSDKsOverlayWrote(t *testing.T) {
	base := writeBase(t,
		"keep.txt:644:same", "edit.txt:644:old", "gone.txt:644:bye", "mv.txt:644:moving",
		"run.sh:644:#!/bin/sh", "touched.txt:600:mode only", "d1/a:644:a",
		"r/x:644:x", "r/y:644:y", "lnk:l:keep.txt")
	db := filepath.Join(t.TempDir(), "delta.db")
	ctx := context.Background()
	afs, err := sdk.Open(ctx, sdk.AgentFSOptions{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := newHostBase(base)
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	o := sdk.NewOverlayFS(hb, afs.FS, afs.DB())
	if err := o.Init(ctx); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"write", func() error { return o.WriteFile(ctx, "/edit.txt", []byte("new"), 0o644) }},
		{"write new", func() error { return o.WriteFile(ctx, "/new/deep/f.txt", []byte("fresh"), 0o644) }},
		{"unlink", func() error { return o.Unlink(ctx, "/gone.txt") }},
		{"unlink in dir", func() error { return o.Unlink(ctx, "/d1/a") }},
		{"rmdir", func() error { return o.Rmdir(ctx, "/d1") }},
		{"rename", func() error { return o.Rename(ctx, "/mv.txt", "/moved.txt") }},
		{"chmod", func() error { return o.Chmod(ctx, "/run.sh", 0o755) }},
		{"chmod to the same mode", func() error { return o.Chmod(ctx, "/touched.txt", 0o600) }},
		{"symlink", func() error { return o.Symlink(ctx, "edit.txt", "/sym") }},
		{"hard link", func() error { return o.Link(ctx, "/keep.txt", "/hard.txt") }},
		{"delete r/x", func() error { return o.Unlink(ctx, "/r/x") }},
		{"delete r/y", func() error { return o.Unlink(ctx, "/r/y") }},
		{"delete r", func() error { return o.Rmdir(ctx, "/r") }},
		{"recreate r", func() error { return o.Mkdir(ctx, "/r", 0o755) }},
		{"write in r", func() error { return o.WriteFile(ctx, "/r/z", []byte("z"), 0o644) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if err := afs.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := Read(db, base)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want := `whiteout d1
file edit.txt 644 "new"
whiteout gone.txt
file hard.txt 644 "same"
file moved.txt 644 "moving"
whiteout mv.txt
directory new
directory new/deep
file new/deep/f.txt 644 "fresh"
directory r
whiteout r/x
whiteout r/y
file r/z 644 "z"
file run.sh 755 "#!/bin/sh"
symlink sym -> edit.txt
`
	if got := listing(t, src); got != want {
		t.Errorf("the delta reads\n%s\nwant\n%s", got, want)
	}
}
