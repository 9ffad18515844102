package refs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// lsTree lists a tree the way git sees it, so tree building is checked by git itself.
func lsTree(t *testing.T, dir string, tree plumbing.Hash) string {
	t.Helper()
	return refstest.Git(t, dir, "ls-tree", "-r", "--format=%(objectmode) %(path)", tree.String())
}

func TestEditTree(t *testing.T) {
	repo, dir := openTestRepo(t, map[string]string{"a.txt": "a", "d/e/f": "f", "d/g": "g", "x": "x"})
	head, _ := repo.ResolveCommit("HEAD")
	c, _ := repo.Commit(head)
	blob, _ := repo.WriteBlob([]byte("new"))
	cases := []struct {
		name  string
		edits []refs.TreeEdit
		want  string
	}{
		{"set a nested new file", []refs.TreeEdit{{Path: "n/m/o", Mode: filemode.Regular, Hash: blob}},
			"100644 a.txt\n100644 d/e/f\n100644 d/g\n100644 n/m/o\n100644 x"},
		{"delete a directory", []refs.TreeEdit{{Path: "d", Delete: true}}, "100644 a.txt\n100644 x"},
		{"last file of a directory takes the directory", []refs.TreeEdit{{Path: "d/e/f", Delete: true}},
			"100644 a.txt\n100644 d/g\n100644 x"},
		{"file replaced by a directory", []refs.TreeEdit{{Path: "x/y", Mode: filemode.Executable, Hash: blob}},
			"100644 a.txt\n100644 d/e/f\n100644 d/g\n100755 x/y"},
		{"directory replaced by a file", []refs.TreeEdit{{Path: "d", Delete: true}, {Path: "d", Mode: filemode.Symlink, Hash: blob}},
			"100644 a.txt\n120000 d\n100644 x"},
		{"opaque directory keeps only new children", []refs.TreeEdit{{Path: "d", Delete: true}, {Path: "d/z", Mode: filemode.Regular, Hash: blob}},
			"100644 a.txt\n100644 d/z\n100644 x"},
		{"root replaced", []refs.TreeEdit{{Path: "", Delete: true}, {Path: "only", Mode: filemode.Regular, Hash: blob}},
			"100644 only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := repo.EditTree(c.TreeHash, tc.edits)
			if err != nil {
				t.Fatal(err)
			}
			if got := lsTree(t, dir, tree); got != tc.want {
				t.Fatalf("tree:\n%s\nwant:\n%s", got, tc.want)
			}
			refstest.Git(t, dir, "fsck", "--no-dangling")
		})
	}
	same, _ := repo.EditTree(c.TreeHash, nil)
	if same != c.TreeHash {
		t.Fatalf("no edits changed the tree")
	}
}

func TestDiffTreesMatchesGit(t *testing.T) {
	repo, dir := openTestRepo(t, map[string]string{"a": "a", "a.txt": "t", "b/c": "c", "link": "->a", "x": "x"})
	refstest.Write(t, dir, map[string]string{"a.txt": "changed", "new/file": "n"})
	refstest.Git(t, dir, "rm", "-q", "x", "link")
	if err := os.Chmod(filepath.Join(dir, "b/c"), 0o755); err != nil {
		t.Fatal(err)
	}
	refstest.Write(t, dir, map[string]string{"x/inner": "file became dir"})
	refstest.Git(t, dir, "add", "-A")
	refstest.Git(t, dir, "commit", "-q", "-m", "change")
	a, _ := repo.ResolveCommit("HEAD~1")
	b, _ := repo.ResolveCommit("HEAD")
	ca, _ := repo.Commit(a)
	cb, _ := repo.Commit(b)
	changes, err := repo.DiffTrees(ca.TreeHash, cb.TreeHash)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, c := range changes {
		got += fmt.Sprintf("%s %s %o %o\n", c.Status, c.Path, c.OldMode, c.NewMode)
	}
	want := "M a.txt 100644 100644\nM b/c 100644 100755\nD link 120000 0\nA new/file 0 100644\nD x 100644 0\nA x/inner 0 100644\n"
	if got != want {
		t.Fatalf("DiffTrees:\n%s\nwant:\n%s", got, want)
	}
	gitSays := refstest.Git(t, dir, "diff-tree", "-r", "--no-renames", "--name-status", a.String(), b.String())
	if gitSays != "M\ta.txt\nM\tb/c\nD\tlink\nA\tnew/file\nD\tx\nA\tx/inner" {
		t.Fatalf("git disagrees with the test's expectation:\n%s", gitSays)
	}
}
