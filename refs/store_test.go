package refs_test

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs/refstest"
)

// TestObjectsMovedByGCAreFound reads an object that git packed, and whose
// loose copy it deleted, after go-git had listed the packs: what a
// background "git gc --auto" does while a lease reads the base.
func TestObjectsMovedByGCAreFound(t *testing.T) {
	repo, dir := openTestRepo(t, map[string]string{"a": "a"})
	refstest.Git(t, dir, "repack", "-adq")
	first := plumbing.NewHash(refstest.Git(t, dir, "rev-parse", "HEAD"))
	if _, err := repo.Commit(first); err != nil { // go-git lists the packs now
		t.Fatal(err)
	}
	refstest.Write(t, dir, map[string]string{"b": "b"})
	refstest.Git(t, dir, "add", "b")
	refstest.Git(t, dir, "commit", "-qm", "b")
	second := plumbing.NewHash(refstest.Git(t, dir, "rev-parse", "HEAD"))
	refstest.Git(t, dir, "repack", "-dq") // packs the loose objects
	refstest.Git(t, dir, "prune-packed")  // and deletes them
	if loose := refstest.Git(t, dir, "count-objects"); loose != "0 objects, 0 kilobytes" {
		t.Fatalf("objects left loose: %s", loose)
	}
	if !repo.HasObject(second) {
		t.Fatal("HasObject: the packed commit is missing")
	}
	c, err := repo.Commit(second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.ReadFile(second, "b", 10); err != nil {
		t.Fatalf("read b from %s (tree %s): %v", second, c.TreeHash, err)
	}
}

// BenchmarkMissingObject looks up an object that is not there, as every
// tree and blob git-lease writes is looked up first, in a repository of
// 20,000 packed files: git-lease's store, next to git cat-file -e doing
// the same. A miss must not re-read the pack indexes unless the packs
// changed.
func BenchmarkMissingObject(b *testing.B) {
	files := map[string]string{}
	for i := range 20000 {
		files[fmt.Sprintf("d%d/f%d", i%100, i)] = fmt.Sprint(i)
	}
	repo, dir := openTestRepo(b, files)
	refstest.Git(b, dir, "repack", "-adq")
	head := plumbing.NewHash(refstest.Git(b, dir, "rev-parse", "HEAD"))
	if _, err := repo.Commit(head); err != nil { // go-git lists the packs now
		b.Fatal(err)
	}
	missing := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	b.Run("git-lease", func(b *testing.B) {
		for b.Loop() {
			if repo.HasObject(missing) {
				b.Fatal("found a missing object")
			}
		}
	})
	b.Run("git", func(b *testing.B) {
		for b.Loop() {
			if exec.Command("git", "-C", dir, "cat-file", "-e", missing.String()).Run() == nil {
				b.Fatal("found a missing object")
			}
		}
	})
}
