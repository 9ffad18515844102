package gitlease

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// reviewLease runs a sandboxed lease with script and returns it in review.
func reviewLease(t *testing.T, repo *refs.Repo, script string) *Execution {
	t.Helper()
	x, out := runAgent(t, repo, script)
	if x.Lease.State != Review {
		t.Fatalf("lease is %s (%s):\n%s", x.Lease.State, x.Lease.Reason, out)
	}
	return x
}

func TestApplyOnlyPromotesSelectedPaths(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a.txt": "a", "src/b.go": "b", "gone.txt": "g"}, "")
	x := reviewLease(t, repo, "echo A > a.txt; echo B > src/b.go; echo C > src/c.go; rm gone.txt")
	if err := Apply(context.Background(), x, ApplyOptions{Only: []string{"src", "gone.txt"}}); err != nil {
		t.Fatal(err)
	}
	if got := refstest.Git(t, dir, "diff", "--name-status", "HEAD~1", "HEAD"); got != "D\tgone.txt\nM\tsrc/b.go\nA\tsrc/c.go" {
		t.Fatalf("promoted commit changes:\n%s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "a" {
		t.Fatalf("a.txt was promoted: %q", b)
	}
	promoted, err := repo.ReadFile(x.Tip, "result/promoted.json", 1<<20)
	if err != nil || !strings.Contains(string(promoted), `"path": "src/c.go"`) || strings.Contains(string(promoted), "a.txt") {
		t.Fatalf("the log does not record exactly what was promoted: %v\n%s", err, promoted)
	}
	if got := strings.Join(x.Lease.Applied.Paths, " "); got != "gone.txt src/b.go src/c.go" && got != "src/b.go src/c.go gone.txt" {
		t.Fatalf("applied paths: %q", got)
	}
}

func TestApplyOnlyRefusesPathsTheLeaseDidNotChange(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a.txt": "a"}, "")
	x := reviewLease(t, repo, "echo A > a.txt")
	err := Apply(context.Background(), x, ApplyOptions{Only: []string{"README"}})
	if err == nil || !strings.Contains(err.Error(), "did not change") {
		t.Fatalf("got %v", err)
	}
}

func TestApplyRefusesADirtyCheckoutAndOtherCheckouts(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a.txt": "a"}, "")
	x := reviewLease(t, repo, "echo A > a.txt")
	must(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("mine"), 0o644))
	err := Apply(context.Background(), x, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("dirty checkout: %v", err)
	}
	refstest.Git(t, dir, "checkout", "-q", "--", "a.txt")
	refstest.Git(t, dir, "branch", "side")
	other := filepath.Join(t.TempDir(), "other")
	refstest.Git(t, dir, "worktree", "add", "-q", other, "side")
	err = Apply(context.Background(), x, ApplyOptions{Onto: "side"})
	if err == nil || !strings.Contains(err.Error(), "checked out in "+other) {
		t.Fatalf("a branch checked out elsewhere: %v", err)
	}
	if err := Apply(context.Background(), x, ApplyOptions{Onto: "lease/" + string(x.Lease.ID)}); err == nil {
		t.Fatalf("applying onto a lease branch was accepted")
	}
	if x.Lease.State != Review {
		t.Fatalf("refused applies changed the lease to %s", x.Lease.State)
	}
}

func TestApplyRefusesAResultThatNoLongerVerifies(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a.txt": "a"}, "")
	x := reviewLease(t, repo, "echo A > a.txt")
	// Someone moves the review branch to another commit.
	refstest.Git(t, dir, "update-ref", x.Lease.ID.BranchRef(), x.Lease.Base)
	err := Apply(context.Background(), x, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("got %v", err)
	}
}

// A quarantined result's legitimate part can be taken: apply --only the
// paths no finding names makes a new result of them alone, verified again,
// and records it as such; the flagged paths, or the whole, cannot be.
func TestApplyOnlyTakesTheUnflaggedPartOfAQuarantinedResult(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a.txt": "a\n"}, "")
	x, out := runAgent(t, repo, `mkdir -p sub; echo '*.bin filter=lfs' > sub/.gitattributes; echo fixed > a.txt`)
	if x.Lease.State != Quarantined {
		t.Fatalf("lease is %s (%s):\n%s", x.Lease.State, x.Lease.Reason, out)
	}
	if err := Apply(context.Background(), x, ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "--only") {
		t.Fatalf("applying a quarantined result whole: %v", err)
	}
	if err := Apply(context.Background(), x, ApplyOptions{Only: []string{"sub"}}); err == nil || !strings.Contains(err.Error(), "named by a finding") {
		t.Fatalf("applying a flagged path: %v", err)
	}
	if err := Apply(context.Background(), x, ApplyOptions{Only: []string{"a.txt"}}); err != nil {
		t.Fatal(err)
	}
	if got := refstest.Git(t, dir, "diff", "--name-status", "HEAD~1", "HEAD"); got != "M\ta.txt" {
		t.Fatalf("the applied commit changes:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", ".gitattributes")); !os.IsNotExist(err) {
		t.Fatalf("the flagged file reached the checkout: %v", err)
	}
	if x.Lease.State != Applied || strings.Join(x.Lease.Applied.Paths, " ") != "a.txt" {
		t.Fatalf("lease %s, applied %+v", x.Lease.State, x.Lease.Applied)
	}
	allowed, err := AllowedSigners(repo, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if v := Verify(context.Background(), x, allowed); !v.OK {
		t.Fatalf("the log of a partly applied quarantined lease does not verify: %v", v.Problems)
	}
}

// Policy may let a protected path wait for the reviewer instead of
// quarantining: the result reaches review with its finding, apply refuses
// it until told to accept, and records what was accepted.
func TestApplyAcceptsWhatPolicyLetsWait(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a.txt": "a\n"}, "[result]\naccept_at_apply = [\"protected-path\"]\n")
	x := reviewLease(t, repo, "echo 'use flake' > .envrc; echo fixed > a.txt")
	if len(x.Lease.Findings) != 1 || x.Lease.Findings[0].Path != ".envrc" {
		t.Fatalf("findings: %+v", x.Lease.Findings)
	}
	if err := Apply(context.Background(), x, ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "--accept") {
		t.Fatalf("applying without accepting: %v", err)
	}
	if err := Apply(context.Background(), x, ApplyOptions{Accept: true}); err != nil {
		t.Fatal(err)
	}
	if got := refstest.Git(t, dir, "diff", "--name-status", "HEAD~1", "HEAD"); got != "A\t.envrc\nM\ta.txt" {
		t.Fatalf("the applied commit changes:\n%s", got)
	}
	if got := strings.Join(x.Lease.Applied.Accepted, ","); got != "protected-path .envrc" {
		t.Fatalf("recorded as accepted: %q", got)
	}
	allowed, err := AllowedSigners(repo, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if v := Verify(context.Background(), x, allowed); !v.OK {
		t.Fatalf("the log does not verify: %v", v.Problems)
	}
	// Without the policy, the same result is quarantined.
	repo2, _ := sandboxRepo(t, map[string]string{"a.txt": "a\n"}, "")
	if y, _ := runAgent(t, repo2, "echo 'use flake' > .envrc"); y.Lease.State != Quarantined {
		t.Fatalf("without accept_at_apply the lease is %s", y.Lease.State)
	}
}

// TestApplyDefaultMessageIsTheMissionAndSummary: without --message,
// apply fast-forwards to the result, whose message is the lease's mission
// and the result's summary; apply --only's promoted commit says the same
// of its part.
func TestApplyDefaultMessageIsTheMissionAndSummary(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a.txt": "a", "b.txt": "b"}, "")
	base := refstest.Git(t, dir, "rev-parse", "main")
	x, _ := runLease(t, repo, StartOptions{Mission: "T-42 parser"}, "echo A > a.txt; echo B > b.txt")
	must(t, Apply(t.Context(), x, ApplyOptions{}))
	want := "T-42 parser: 2 files changed: 0 added, 2 modified, 0 deleted\n\nLease-ID: " + string(x.Lease.ID) + "\nLease-Base: " + base + "\n"
	if got := refstest.Git(t, dir, "log", "-1", "--format=%B", "main"); got+"\n" != want || x.Lease.Applied.Commit != x.Lease.Result.Commit {
		t.Fatalf("applied commit %s (result %s):\n%s\nwant\n%s", x.Lease.Applied.Commit, x.Lease.Result.Commit, got, want)
	}
	base = refstest.Git(t, dir, "rev-parse", "main")
	x, _ = runLease(t, repo, StartOptions{Mission: "T-43"}, "echo AA > a.txt; echo BB > b.txt")
	must(t, Apply(t.Context(), x, ApplyOptions{Only: []string{"a.txt"}}))
	want = "T-43: promote 1 of 2 changes\n\nLease-ID: " + string(x.Lease.ID) + "\nLease-Base: " + base + "\n"
	if got := refstest.Git(t, dir, "log", "-1", "--format=%B", "main"); got+"\n" != want {
		t.Fatalf("promoted commit:\n%s\nwant\n%s", got, want)
	}
}

// TestApplyNeedsAnIdentityAndTakesAMessage collects a result where git has
// no identity: apply refuses to put git-lease's placeholder on the branch;
// once there is one, apply --message commits the result's tree again, by
// the user, with the message.
func TestApplyNeedsAnIdentityAndTakesAMessage(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a.txt": "a"}, "")
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE"} {
		t.Setenv(k, "")
	}
	x := reviewLease(t, repo, "echo A > a.txt")
	base := refstest.Git(t, dir, "rev-parse", "main")
	err := Apply(t.Context(), x, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "git has no identity") {
		t.Fatalf("apply without an identity: %v", err)
	}
	if now := refstest.Git(t, dir, "rev-parse", "main"); now != base {
		t.Fatalf("main moved to %s", now)
	}
	refstest.Setenv(t)
	repo, err = refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if x, err = Load(repo, x.Lease.ID); err != nil {
		t.Fatal(err)
	}
	if err := Apply(t.Context(), x, ApplyOptions{Message: "a: say A"}); err != nil {
		t.Fatal(err)
	}
	got := refstest.Git(t, dir, "log", "-1", "--format=%an <%ae>|%B|%T|%P", "main")
	want := "Ada Lease <ada@example.com>|a: say A\n\nLease-ID: " + string(x.Lease.ID) + "\n|" + x.Lease.Result.Tree + "|" + base
	if got != want {
		t.Fatalf("applied commit:\n%s\nwant\n%s", got, want)
	}
	if x.Lease.Applied.Commit == x.Lease.Result.Commit || x.Lease.Applied.Commit != refstest.Git(t, dir, "rev-parse", "main") {
		t.Fatalf("applied %s, result %s", x.Lease.Applied.Commit, x.Lease.Result.Commit)
	}
	allowed, err := AllowedSigners(repo, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if v := Verify(t.Context(), x, allowed); !v.OK {
		t.Fatalf("the applied lease does not verify: %v", v.Problems)
	}
}
