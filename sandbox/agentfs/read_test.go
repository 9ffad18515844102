package agentfs

import (
	"context"
	"database/sql"
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
	ctx := context.Background()
	db, o, done := sdkOverlay(t, base)
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
	done()
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

// sdkOverlay opens a new database with the Go SDK's OverlayFS over base;
// done closes it.
func sdkOverlay(t *testing.T, base string) (db string, o *sdk.OverlayFS, done func()) {
	t.Helper()
	db = filepath.Join(t.TempDir(), "delta.db")
	ctx := context.Background()
	afs, err := sdk.Open(ctx, sdk.AgentFSOptions{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := newHostBase(base)
	if err != nil {
		t.Fatal(err)
	}
	o = sdk.NewOverlayFS(hb, afs.FS, afs.DB())
	if err := o.Init(ctx); err != nil {
		t.Fatal(err)
	}
	return db, o, func() {
		hb.Close()
		if err := afs.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadsTheCLIsWhiteoutTable checks the reader against the shape of the
// overlay tables that the AgentFS CLI makes, as read from AgentFS v0.6.4's
// source (its Rust overlay): fs_whiteout(path, created_at) without the
// parent_path column of the Go SDK and the spec, and fs_overlay_config.
// The CLI cannot be installed here, so the whiteouts are the Go SDK's,
// moved into a table of the CLI's shape.
func TestReadsTheCLIsWhiteoutTable(t *testing.T) {
	base := writeBase(t, "a.txt:644:a", "dir/b.txt:644:b", "dir/c.txt:644:c")
	ctx := context.Background()
	db, o, done := sdkOverlay(t, base)
	for _, err := range []error{o.Unlink(ctx, "/a.txt"), o.Unlink(ctx, "/dir/b.txt")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	done()
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`ALTER TABLE fs_whiteout RENAME TO sdk_whiteout`,
		`CREATE TABLE fs_whiteout (path TEXT PRIMARY KEY, created_at INTEGER NOT NULL)`,
		`INSERT INTO fs_whiteout SELECT path, created_at FROM sdk_whiteout`,
		`DROP TABLE sdk_whiteout`,
		`CREATE TABLE fs_overlay_config (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`INSERT INTO fs_overlay_config VALUES ('base_path', '/somewhere/else')`,
	} {
		if _, err := conn.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	conn.Close()
	src, err := Read(db, base)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want := "whiteout a.txt\nwhiteout dir/b.txt\n"
	if got := listing(t, src); got != want {
		t.Errorf("the delta reads\n%s\nwant\n%s", got, want)
	}
}
