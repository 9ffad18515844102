package gitlease

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGCRetiresAStaleReviewLeaseKeepingEdits leaves a lease in review with
// a person's edit in its review worktree: gc without a review age keeps it
// and says so; with one, it rejects the lease and cleans it up, keeping the
// edited worktree.
func TestGCRetiresAStaleReviewLeaseKeepingEdits(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a.txt": "a"}, "")
	x := reviewLease(t, repo, "echo A > a.txt")
	// The lease's runner, this process, counts as gone, as git lease
	// start would be by then.
	must(t, os.Remove(filepath.Join(x.RunDir(), "runner.json")))
	edited := filepath.Join(x.Worktree(), "a.txt")
	must(t, os.WriteFile(edited, []byte("mine\n"), 0o644))
	done, err := GC(t.Context(), repo, GCOptions{})
	if err != nil || len(done) != 1 || !strings.HasPrefix(done[0], "keep 1 lease(s) in review") {
		t.Fatalf("gc without a review age: %q %v", done, err)
	}
	done, err = GC(t.Context(), repo, GCOptions{RetireReview: true})
	if err != nil || len(done) != 1 || !strings.Contains(done[0], "reject stale lease "+string(x.Lease.ID)) || !strings.Contains(done[0], "kept its review worktree") {
		t.Fatalf("gc with a review age: %q %v", done, err)
	}
	if x, err = Load(repo, x.Lease.ID); err != nil || x.Lease.State != Rejected {
		t.Fatalf("lease %v: %v", x.Lease.State, err)
	}
	if b, err := os.ReadFile(edited); err != nil || string(b) != "mine\n" {
		t.Fatalf("the edit is gone: %q %v", b, err)
	}
}
