package agentfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// fuseOrSkip skips a test that mounts FUSE where this user cannot.
func fuseOrSkip(t *testing.T) {
	t.Helper()
	if err := fuseAvailable(); err != nil {
		t.Skip(err)
	}
}

// TestServesTheOverlayOverFUSE changes a mounted /work with ordinary
// system calls and reads the changes back from the database.
func TestServesTheOverlayOverFUSE(t *testing.T) {
	fuseOrSkip(t)
	base := writeBase(t, "keep.txt:644:same", "edit.txt:644:old", "gone.txt:644:bye",
		"dir/a.txt:644:a", "tree/x:644:x", "run.sh:644:#!/bin/sh")
	mnt, db := t.TempDir(), filepath.Join(t.TempDir(), "delta.db")
	stop, err := mount(mnt, db, base, 1<<30, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	at := func(p string) string { return filepath.Join(mnt, p) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(at("keep.txt")); err != nil || string(b) != "same" {
		t.Fatalf("the base reads %q, %v", b, err)
	}
	f, err := os.OpenFile(at("edit.txt"), os.O_WRONLY|os.O_APPEND, 0)
	must(err)
	_, err = f.WriteString(" and new")
	must(err)
	must(f.Close())
	must(os.Mkdir(at("dir/sub"), 0o755))
	must(os.WriteFile(at("dir/sub/new.txt"), []byte("new"), 0o644))
	must(os.Remove(at("gone.txt")))
	must(os.Rename(at("dir/a.txt"), at("b.txt")))
	must(os.Chmod(at("run.sh"), 0o755))
	must(os.Symlink("keep.txt", at("sym")))
	must(os.Link(at("b.txt"), at("hard.txt")))
	if err := os.Rename(at("tree"), at("moved")); !os.IsExist(err) && err.(*os.LinkError).Err != syscall.EXDEV {
		t.Errorf("renaming a directory of the base: %v, want EXDEV", err)
	}
	if err := syscall.Mknod(at("fifo"), syscall.S_IFIFO|0o644, 0); err == nil {
		t.Error("a FIFO was made")
	}
	must(os.RemoveAll(at("tree")))
	must(os.Mkdir(at("tree"), 0o755))
	must(os.WriteFile(at("tree/y"), []byte("y"), 0o644))
	if b, err := os.ReadFile(at("edit.txt")); err != nil || string(b) != "old and new" {
		t.Fatalf("edit.txt reads %q, %v", b, err)
	}
	must(stop())
	src, err := Read(db, base)
	must(err)
	defer src.Close()
	want := `file b.txt 644 "a"
directory dir
whiteout dir/a.txt
directory dir/sub
file dir/sub/new.txt 644 "new"
file edit.txt 644 "old and new"
whiteout gone.txt
file hard.txt 644 "a"
file run.sh 755 "#!/bin/sh"
symlink sym -> keep.txt
directory tree
whiteout tree/x
file tree/y 644 "y"
`
	if got := listing(t, src); got != want {
		t.Errorf("the delta reads\n%s\nwant\n%s", got, want)
	}
}

// TestWritesStopAtTheDatabasesBound: once the database holds its bound,
// writes fail with ENOSPC, and reads go on.
func TestWritesStopAtTheDatabasesBound(t *testing.T) {
	fuseOrSkip(t)
	base := writeBase(t, "keep.txt:644:same")
	mnt, db := t.TempDir(), filepath.Join(t.TempDir(), "delta.db")
	stop, err := mount(mnt, db, base, 1<<20, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	chunk := make([]byte, 64<<10)
	var werr error
	for i := 0; i < 64 && werr == nil; i++ {
		werr = os.WriteFile(filepath.Join(mnt, fmt.Sprint("f", i)), chunk, 0o644)
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("4 MiB of writes under a 1 MiB bound ended with %v, want ENOSPC", werr)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "keep.txt")); err != nil || string(b) != "same" {
		t.Fatalf("reading past the bound: %q, %v", b, err)
	}
}

// TestFsyncCommits: a file the agent has fsynced is in the database at
// once, for any reader (the server batches its writes in transactions).
func TestFsyncCommits(t *testing.T) {
	fuseOrSkip(t)
	mnt, db := t.TempDir(), filepath.Join(t.TempDir(), "delta.db")
	base := writeBase(t, "keep.txt:644:same")
	stop, err := mount(mnt, db, base, 1<<30, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	f, err := os.Create(filepath.Join(mnt, "synced.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("kept"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	src, err := Read(db, base)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if got, want := listing(t, src), "file synced.txt 644 \"kept\"\n"; got != want {
		t.Fatalf("after fsync, collection reads\n%s\nwant\n%s", got, want)
	}
}

// BenchmarkSmallWrites writes small files through the mount, as a build
// does: the cost of a file is the server's (go test -bench SmallWrites
// -cpuprofile to see where it goes).
func BenchmarkSmallWrites(b *testing.B) {
	if err := fuseAvailable(); err != nil {
		b.Skip(err)
	}
	base := b.TempDir()
	mnt, db := b.TempDir(), filepath.Join(b.TempDir(), "delta.db")
	stop, err := mount(mnt, db, base, 1<<30, os.Getuid(), os.Getgid())
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	if err := os.Mkdir(filepath.Join(mnt, "gen"), 0o755); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := os.WriteFile(filepath.Join(mnt, "gen", fmt.Sprintf("f%d", i)), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := stop(); err != nil {
		b.Fatal(err)
	}
}
