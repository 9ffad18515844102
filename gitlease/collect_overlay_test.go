package gitlease

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/sandbox"
)

// TestCollectOverlayUpper builds an overlayfs upper directory by hand, as
// the kernel writes one, and checks that only it is read: whiteouts delete,
// opaque directories replace, everything else of the base stays.
func TestCollectOverlayUpper(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{
		"keep.txt": "k", "gone.txt": "g", "src/a.go": "a", "src/b.go": "b", "old/x": "x", "old/y": "y", "was-file": "f",
	})
	repo, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := repo.ResolveCommit("HEAD")
	upper := t.TempDir()
	refstest.Write(t, upper, map[string]string{"src/a.go": "edited", "src/new.go": "new", "old/z": "z", "was-file/inside": "i"})
	must(t, unix.Mknod(filepath.Join(upper, "gone.txt"), unix.S_IFCHR, 0))
	// old/ was removed and recreated by the agent: opaque, only z remains.
	must(t, unix.Setxattr(filepath.Join(upper, "old"), "user.overlay.opaque", []byte("y"), 0))
	must(t, unix.Setxattr(filepath.Join(upper, "was-file"), "user.overlay.opaque", []byte("y"), 0))
	must(t, os.MkdirAll(filepath.Join(upper, "empty/dir"), 0o755))

	c, err := collect(context.Background(), repo, base, sandbox.Delta{Root: upper, Layout: sandbox.Overlay})
	if err != nil {
		t.Fatal(err)
	}
	want := `D gone.txt 100644->000000
D old/x 100644->000000
D old/y 100644->000000
A old/z 000000->100644
M src/a.go 100644->100644
A src/new.go 000000->100644
D was-file 100644->000000
A was-file/inside 000000->100644
`
	if got := manifestLines(c); got != want {
		t.Fatalf("manifest:\n%s\nwant:\n%s", got, want)
	}
	if got := refstest.Git(t, dir, "ls-tree", "-r", "--name-only", c.Tree.String()); got != "keep.txt\nold/z\nsrc/a.go\nsrc/b.go\nsrc/new.go\nwas-file/inside" {
		t.Fatalf("result tree:\n%s", got)
	}
}
