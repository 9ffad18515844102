package gitlease

import (
	"context"
	"fmt"
	"time"

	"github.com/git-lease/git-lease/refs"
)

// GCOptions are the inputs of git lease gc.
type GCOptions struct {
	OlderThan time.Duration
	// Applied also prunes applied leases (their result is in the target
	// branch's history, but the evidence goes with the log).
	Applied bool
	DryRun  bool
}

// GC prunes decided leases (rejected, quarantined, failed, canceled; applied
// too with opts.Applied) whose cleanup is confirmed and whose last event is
// older than OlderThan: their log and review branch. Leases still in review
// are kept, and so is a branch lease/<id>-edits of recorded human edits. Each deletion is compare-and-swap on the value read, so a
// lease that changes meanwhile is left alone. It returns what it pruned
// (or, with DryRun, would prune).
func GC(ctx context.Context, repo *refs.Repo, opts GCOptions) ([]string, error) {
	all, err := List(repo)
	if err != nil {
		return nil, err
	}
	cutoff := repo.Now().Add(-opts.OlderThan)
	var done []string
	for _, x := range all {
		l := x.Lease
		switch {
		case x.ReadOnly():
			continue
		case l.Cleanup == nil || l.Cleanup.State != CleanupConfirmed:
			continue
		case l.UpdatedAt.After(cutoff):
			continue
		case l.State == Review, l.State == Applied && !opts.Applied:
			continue
		}
		what := fmt.Sprintf("prune lease %s (%s, last event %s)", l.ID, l.State, l.UpdatedAt.Format(time.DateOnly))
		if opts.DryRun {
			done = append(done, "would "+what)
			continue
		}
		updates := []refs.RefUpdate{{Name: l.ID.LogRef(), Old: x.Tip}}
		if branch, _ := repo.Ref(l.ID.BranchRef()); !branch.IsZero() {
			updates = append(updates, refs.RefUpdate{Name: l.ID.BranchRef(), Old: branch})
		}
		if err := repo.Update(ctx, "git lease gc", updates...); err != nil {
			return done, fmt.Errorf("lease %s: %w", l.ID, err)
		}
		done = append(done, what)
	}
	return done, nil
}
