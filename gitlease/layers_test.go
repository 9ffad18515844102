package gitlease

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/gitlease/policy/policytest"
	"github.com/git-lease/git-lease/refs/refstest"
)

// listing prints every path under the current directory with its type,
// mode and symlink target, and every file's checksum: what a tree looks
// like to a program that reads it.
const listing = `find . -mindepth 1 -path ./.git -prune -o -printf '%y %m %p %l\n' | LC_ALL=C sort; find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum`

// A lease on a base that moved since the last export sees exactly the new
// tree, though its overlay stacks a layer of what changed (whiteouts,
// opaque directories, files) on the old export: every kind of change
// between two trees, seen by an agent in the sandbox, as root and as an
// unprivileged user (who cannot make whiteouts with mknod's usual rights).
// What the agent then changes is collected as on any base.
func TestSandboxLayeredBaseShowsTheMovedTree(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{
		"keep.txt": "keep\n", "mod.txt": "old\n", "gone.txt": "gone\n",
		"olddir/a": "a\n", "olddir/sub/b": "b\n", "f2d": "file\n",
		"d2f/x": "x\n", "d2f/y": "y\n", "exe.sh": "echo\n", "link": "->keep.txt",
		"same/deep/file": "same\n", "d2s/file": "becomes a submodule\n",
	}, "")
	first, _ := runAgent(t, repo, "true")
	refstest.Git(t, dir, "rm", "-q", "-r", "gone.txt", "olddir", "f2d", "d2f", "d2s")
	// A submodule is an empty directory where one with files was.
	refstest.Git(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+first.Lease.Base+",d2s")
	must(t, os.Mkdir(filepath.Join(dir, "d2s"), 0o755))
	refstest.Write(t, dir, map[string]string{
		"mod.txt": "new\n", "f2d/inner": "inner\n", "d2f": "now a file\n",
		"new/deep/file": "new\n", "olddir/sub/b2": "b2\n",
	})
	must(t, os.Remove(filepath.Join(dir, "link")))
	refstest.Write(t, dir, map[string]string{"link": "->mod.txt"})
	must(t, os.Chmod(filepath.Join(dir, "exe.sh"), 0o755))
	refstest.Git(t, dir, "add", "-A")
	refstest.Git(t, dir, "commit", "-q", "-m", "moved")
	want := refstest.Git(t, dir, "rev-parse", "HEAD^{tree}")
	host := exec.Command("sh", "-c", listing)
	host.Dir = dir
	expected, err := host.Output()
	if err != nil {
		t.Fatal(err)
	}

	x, out := runAgent(t, repo, listing+"; echo more >> keep.txt; rm f2d/inner; echo sub > olddir/sub/c")
	if got := strings.TrimSpace(out); got != strings.TrimSpace(string(expected)) {
		t.Fatalf("the agent's tree differs from the base's:\n%s\nwant:\n%s", got, expected)
	}
	bases := repo.LeaseDir("bases")
	parent, err := os.ReadFile(filepath.Join(bases, strings.TrimSpace(want), "parent"))
	if err != nil {
		t.Fatalf("the moved base was not laid over the first: %v", err)
	}
	if p := strings.TrimSpace(string(parent)); p != mustTree(repo, plumbing.NewHash(first.Lease.Base)).String() {
		t.Fatalf("laid over %s, not the first lease's base", p)
	}
	if _, err := os.Lstat(filepath.Join(bases, strings.TrimSpace(want), "layer", "keep.txt")); err == nil {
		t.Fatalf("the layer holds a file that did not change")
	}
	changed := refstest.Git(t, dir, "diff", "--name-status", x.Lease.Base, x.Lease.Branch)
	if changed != "D\tf2d/inner\nM\tkeep.txt\nA\tolddir/sub/c" {
		t.Fatalf("the result is not what the agent did:\n%s", changed)
	}
}

// The bases' bounds are trusted policy's: a repository cannot keep its
// exports from being evicted, or make gc evict everyone's.
func TestBasesPolicyIsTrustedOnly(t *testing.T) {
	_, eff, err := policytest.Repo(t, "[bases]\nmax_age = \"48h\"\nmax_bytes = \"1GiB\"\n", "")
	if err != nil || eff.Bases.MaxAge != policy.Duration(48*time.Hour) || eff.Bases.MaxBytes != 1<<30 {
		t.Fatalf("trusted [bases]: %+v, %v", eff.Bases, err)
	}
	for _, toml := range []string{"[bases]\nmax_age = \"8760h\"", "[bases]\nmax_bytes = 0"} {
		if _, _, err := policytest.Repo(t, "", toml); !errors.Is(err, policy.ErrWiden) || !strings.Contains(err.Error(), "only trusted policy may set") {
			t.Fatalf(".lease.toml %q: %v", toml, err)
		}
	}
}

// A sandboxed lease's review worktree is checked out at the base while the
// agent works, so checking the result out rewrites only what the agent
// changed: a file it left alone was written before one it changed, though
// a whole checkout writes them in path order.
func TestReviewWorktreeIsCheckedOutWhileTheAgentWorks(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a.txt": "a\n", "z.txt": "z\n"}, "")
	x, _ := runAgent(t, repo, "echo changed > a.txt")
	var changed, untouched os.FileInfo
	var err error
	if changed, err = os.Stat(filepath.Join(x.Worktree(), "a.txt")); err != nil {
		t.Fatal(err)
	}
	if untouched, err = os.Stat(filepath.Join(x.Worktree(), "z.txt")); err != nil {
		t.Fatal(err)
	}
	if !untouched.ModTime().Before(changed.ModTime()) {
		t.Fatalf("the untouched file was written at %s, not before the changed one (%s)", untouched.ModTime(), changed.ModTime())
	}
	if x.stagedAtBase() {
		t.Fatalf("the review worktree still says it holds the base")
	}
}
