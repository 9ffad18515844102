package gitlease

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/verify"
)

// TestManyFindingsAreCappedAndCounted is a result that breaks a rule 250
// times: the record and findings.json keep the first maxStoredFindings,
// the record counts the rest, and the listing of findings says how many.
func TestManyFindingsAreCappedAndCounted(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	x, out := runLocal(t, repo, `mkdir .github; for i in $(seq 250); do echo x > .github/f$i; done`)
	if x.Lease.State != Quarantined {
		t.Fatalf("state %s (%s)\n%s", x.Lease.State, x.Lease.Reason, out)
	}
	if len(x.Lease.Findings) != maxStoredFindings || x.Lease.FindingsOmitted != 250-maxStoredFindings {
		t.Fatalf("the record keeps %d findings and counts %d more, want %d and %d",
			len(x.Lease.Findings), x.Lease.FindingsOmitted, maxStoredFindings, 250-maxStoredFindings)
	}
	b, err := repo.ReadFile(x.Tip, findingsFile, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var stored []verify.Finding
	if err := json.Unmarshal(b, &stored); err != nil || len(stored) != maxStoredFindings {
		t.Fatalf("findings.json holds %d findings (%v), want %d", len(stored), err, maxStoredFindings)
	}
	list, err := Findings(repo)
	if err != nil {
		t.Fatal(err)
	}
	last := list[len(list)-1]
	if len(list) != maxStoredFindings+1 || last.Rule != RuleFindingsOmitted || !strings.HasPrefix(last.Detail, "150 more findings") {
		t.Fatalf("the listing has %d entries, the last %+v; want the stored ones and a count of the rest", len(list), last)
	}
}

// TestRecordsHoldNoHostPaths runs a lease whose collection fails (its
// trusted_local agent removes its own tree) and cleans it up, and cleans
// up a lease in review whose review worktree someone replaced with a file
// (cleanup cannot tell whether it holds edits, and fails). Each error
// names a host path; no object reachable from the leases' logs and the
// notes, which are what push sends, holds the repository's path.
func TestRecordsHoldNoHostPaths(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a": "a"}, "")
	ctx := context.Background()
	failed, out := runLocal(t, repo, `tree="$PWD"; cd /; rm -rf "$tree"`)
	if failed.Lease.State != Failed || !strings.Contains(failed.Lease.Reason, "<review worktree>") {
		t.Fatalf("state %s (%s), want failed in collection\n%s", failed.Lease.State, failed.Lease.Reason, out)
	}
	if _, _, err := cleanupHere(ctx, failed); err != nil {
		t.Fatal(err)
	}
	review, out := runLocal(t, repo, `echo b > b`)
	if review.Lease.State != Review {
		t.Fatalf("state %s (%s)\n%s", review.Lease.State, review.Lease.Reason, out)
	}
	must(t, os.RemoveAll(review.Worktree()))
	must(t, os.WriteFile(review.Worktree(), []byte("not a directory"), 0o644))
	c, _, err := cleanupHere(ctx, review)
	if err != nil {
		t.Fatal(err)
	}
	if c.State != CleanupFailed || !strings.Contains(fmt.Sprint(c.Receipt), "<review worktree>") {
		t.Fatalf("cleanup %s: %+v, want failed on the review worktree", c.State, c.Receipt)
	}
	objects := refstest.Git(t, dir, "rev-list", "--objects", "refs/leases/"+string(failed.Lease.ID), "refs/leases/"+string(review.Lease.ID), refs.NotesRef)
	var ids strings.Builder
	for _, line := range strings.Split(objects, "\n") {
		id, _, _ := strings.Cut(line, " ")
		ids.WriteString(id + "\n")
	}
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(ids.String())
	all, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, hostPath := range []string{filepath.Dir(dir), repo.LeaseDir()} {
		if i := bytes.Index(all, []byte(hostPath)); i >= 0 {
			t.Fatalf("an object of the records holds %s: …%s…", hostPath, all[max(i-200, 0):min(i+200, len(all))])
		}
	}
}

// cleanupHere cleans up a lease this test process ran. The process is its
// runner: its runner record goes first, as it would when git lease start
// exits, or cleanup would kill the runner.
func cleanupHere(ctx context.Context, x *Execution) (*Cleanup, bool, error) {
	os.Remove(filepath.Join(x.RunDir(), "runner.json"))
	return CleanupLease(ctx, x, CleanupOptions{})
}
