package gitlease

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// GCOptions are the inputs of git lease gc.
type GCOptions struct {
	OlderThan time.Duration
	// Applied also prunes applied leases (their result is in the target
	// branch's history, but the evidence goes with the log).
	Applied bool
	DryRun  bool
	// Force also prunes a lease whose review worktree is still on disk
	// (cleanup kept it for a person's edits), after noting what it
	// dropped in .git/lease/removed.jsonl. The worktree's files stay.
	Force bool
}

// GC prunes decided leases (rejected, quarantined, failed, canceled; applied
// too with opts.Applied) whose cleanup is confirmed and whose last event is
// older than OlderThan: their log and review branch. Leases still in review
// are kept, and so is a branch lease/<id>-edits of recorded human edits. A
// lease whose review worktree is still on disk (cleanup kept it, as it
// differed from what the lease put there) is kept, and said so, unless
// Force: pruning its log and branch would leave a person's edits in a
// worktree of a branch that no longer exists, of a lease git-lease no
// longer knows. Each deletion is compare-and-swap on the value read, so a
// lease that changes meanwhile is left alone. It returns what it pruned
// and kept (or, with DryRun, would prune).
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
		kept := x.keptWorktree()
		if kept != "" && !opts.Force {
			done = append(done, fmt.Sprintf("keep lease %s: %s (git lease cleanup --keep-edits %s records them; gc --force prunes it anyway)", l.ID, kept, l.ID.Short()))
			continue
		}
		if kept != "" {
			what += ", dropping it although " + kept
		}
		if opts.DryRun {
			done = append(done, "would "+what)
			continue
		}
		updates := []refs.RefUpdate{{Name: l.ID.LogRef(), Old: x.Tip}}
		branch, _ := repo.Ref(l.ID.BranchRef())
		if !branch.IsZero() {
			updates = append(updates, refs.RefUpdate{Name: l.ID.BranchRef(), Old: branch})
		}
		if kept != "" {
			r := removal{At: repo.Now(), ID: l.ID, Log: x.Tip.String(), Why: "gc --force: " + kept + " (at " + x.Worktree() + ")"}
			if !branch.IsZero() {
				r.Branch = branch.String()
			}
			if err := noteRemoval(repo, r); err != nil {
				return done, err
			}
		}
		if err := repo.Update(ctx, "git lease gc", updates...); err != nil {
			return done, fmt.Errorf("lease %s: %w", l.ID, err)
		}
		done = append(done, what)
	}
	return done, nil
}

// EvictBases removes the exported bases that no lease uses, by the age
// and size cap of trusted policy's [bases] table, and says what it freed
// (or, with dryRun, would free).
func EvictBases(repo *refs.Repo, dryRun bool) ([]string, error) {
	policy, err := loadPolicy(repo, plumbing.ZeroHash, "")
	if err != nil {
		return nil, err
	}
	b := policy.Bases
	return bwrap.EvictBases(repo.LeaseDir("bases"), time.Duration(b.MaxAge), int64(b.MaxBytes), time.Now(), dryRun)
}

// keptWorktree says why the lease's review worktree must outlive its log
// ("" when nothing does): cleanup kept it for edits it did not record, or
// it is still on disk.
func (x *Execution) keptWorktree() string {
	if c := x.Lease.Cleanup; c != nil {
		for _, item := range c.Receipt {
			if item.Resource == "review-worktree" && item.Action == ActionKept {
				return "cleanup kept its review worktree for edits it did not record"
			}
		}
	}
	if _, err := os.Lstat(x.Worktree()); err == nil {
		return "its review worktree is still on disk"
	}
	return ""
}
