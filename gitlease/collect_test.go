package gitlease

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/sandbox"
)

// manifestLines renders a manifest as "S path old->new" lines.
func manifestLines(c *collected) string {
	var b strings.Builder
	for _, f := range c.Manifest.Files {
		b.WriteString(f.Status + " " + f.Path + " " + f.OldMode + "->" + f.NewMode + "\n")
	}
	return b.String()
}

func TestCollectFullTree(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{
		"keep": "k", "edit": "e", "gone": "g", "nested/deep/file": "n", "tool": "t", "link": "->keep", "becomes-dir": "f",
	})
	repo, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := repo.ResolveCommit("HEAD")
	// The agent's work, done directly in the tree.
	must(t, os.WriteFile(filepath.Join(dir, "edit"), []byte("edited"), 0o644))
	must(t, os.Remove(filepath.Join(dir, "gone")))
	must(t, os.Chmod(filepath.Join(dir, "tool"), 0o755))
	must(t, os.Remove(filepath.Join(dir, "link")))
	must(t, os.Symlink("nested/deep", filepath.Join(dir, "link")))
	must(t, os.MkdirAll(filepath.Join(dir, "empty/dirs/are/ignored"), 0o755))
	must(t, os.Remove(filepath.Join(dir, "becomes-dir")))
	refstest.Write(t, dir, map[string]string{"becomes-dir/child": "c", "nested/deep/new": "new", "added": "a", "dangling": "->/nowhere"})

	c, err := collect(context.Background(), repo, base, sandbox.Delta{Root: dir, Layout: sandbox.Full})
	if err != nil {
		t.Fatal(err)
	}
	want := `A added 000000->100644
D becomes-dir 100644->000000
A becomes-dir/child 000000->100644
A dangling 000000->120000
M edit 100644->100644
D gone 100644->000000
M link 120000->120000
A nested/deep/new 000000->100644
M tool 100644->100755
`
	if got := manifestLines(c); got != want {
		t.Fatalf("manifest:\n%s\nwant:\n%s", got, want)
	}
	// git itself agrees: the result tree is what git add -A would record.
	refstest.Git(t, dir, "add", "-A")
	if gitTree := refstest.Git(t, dir, "write-tree"); gitTree != c.Tree.String() {
		t.Fatalf("result tree %s, git write-tree says %s", c.Tree, gitTree)
	}
	if !strings.Contains(string(c.Patch), "diff --git a/edit b/edit") || !strings.Contains(string(c.Patch), "+edited") {
		t.Fatalf("patch lacks the edit:\n%s", c.Patch)
	}
}

func TestCollectNoChangesIsEmptyManifest(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"a": "a"})
	repo, _ := refs.Open(dir)
	base, _ := repo.ResolveCommit("HEAD")
	c, err := collect(context.Background(), repo, base, sandbox.Delta{Root: dir, Layout: sandbox.Full})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Manifest.Files) != 0 || len(c.Patch) != 0 {
		t.Fatalf("unchanged tree gave %d changes and patch %q", len(c.Manifest.Files), c.Patch)
	}
}

func TestCollectRefusesSpecialFiles(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"a": "a"})
	repo, _ := refs.Open(dir)
	base, _ := repo.ResolveCommit("HEAD")
	must(t, unix.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	_, err := collect(context.Background(), repo, base, sandbox.Delta{Root: dir, Layout: sandbox.Full})
	if err == nil || !strings.Contains(err.Error(), "pipe") {
		t.Fatalf("collect with a FIFO: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
