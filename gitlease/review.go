package gitlease

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/sandbox"
)

// ReviewReport says whether what a reviewer looks at is what the lease
// recorded: the patch against its digest and the manifest, the tree git
// derives from base + patch against the result tree and the review branch,
// and the review worktree's files against the result.
type ReviewReport struct {
	ID       string   `json:"id"`
	Match    bool     `json:"match"`
	Derived  string   `json:"derived_tree"`
	Checked  []string `json:"checked"`
	Problems []string `json:"problems"`
	// Worktree lists paths where the review worktree differs from the
	// result ("M path"): edits made during review, or tampering.
	Worktree []string `json:"worktree_differences"`
}

// CheckReview re-derives the lease's result from its log and compares it with
// everything a reviewer relies on. It writes nothing but a temporary index
// and the blobs of files found in the review worktree.
func CheckReview(ctx context.Context, x *Execution) (*ReviewReport, error) {
	rep, err := x.verifyRecorded(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(x.Worktree(), ".git")); err == nil {
		diffs, err := x.worktreeDifferences(ctx, plumbing.NewHash(x.Lease.Result.Tree))
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("review worktree: %v", err))
		}
		rep.Worktree = diffs
		if len(diffs) > 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("the review worktree differs from the result in %d path(s)", len(diffs)))
		}
		rep.Checked = append(rep.Checked, "review worktree = result tree")
	}
	rep.Match = len(rep.Problems) == 0
	return rep, nil
}

// verifyRecorded checks the recorded result with checkRecorded, and the
// review branch. It needs only the log and the objects, so it works after
// cleanup.
func (x *Execution) verifyRecorded(ctx context.Context) (*ReviewReport, error) {
	r := x.Lease.Result
	if r == nil || r.Tree == "" {
		return nil, fmt.Errorf("lease %s has no collected result (it is %s)", x.Lease.ID, x.Lease.State)
	}
	rep := &ReviewReport{ID: string(x.Lease.ID), Problems: []string{}, Worktree: []string{}}
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	checked, derived := checkRecorded(ctx, x.Repo, x.Tip, x.Lease, problem)
	rep.Checked = checked
	if !derived.IsZero() {
		rep.Derived = derived.String()
	}
	if x.Lease.holdsResult() {
		if tip, _ := x.Repo.Ref(x.Lease.ID.BranchRef()); tip.String() != r.Commit {
			problem("branch %s is at %s, not at the result commit %s", x.Lease.Branch, tip, r.Commit)
		}
		rep.Checked = append(rep.Checked, "review branch = result commit")
	}
	rep.Match = len(rep.Problems) == 0
	return rep, nil
}

// worktreeDifferences hashes the review worktree on the host (lstat only,
// .git skipped) and lists where it differs from tree.
func (x *Execution) worktreeDifferences(ctx context.Context, tree plumbing.Hash) ([]string, error) {
	c, err := collect(ctx, x.Repo, plumbing.NewHash(x.Lease.Result.Commit), sandbox.Delta{Root: x.Worktree(), Layout: sandbox.Full})
	if err != nil {
		return nil, err
	}
	changes, err := x.Repo.DiffTrees(tree, c.Tree)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, ch := range changes {
		out = append(out, ch.Status+" "+ch.Path)
	}
	return out, nil
}
