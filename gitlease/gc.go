package gitlease

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
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
	// RetireReview makes a lease of this clone left in review for longer
	// than ReviewOlderThan stale: gc rejects it and cleans it up (a review
	// worktree with edits is kept, as cleanup keeps it), so that a later
	// gc prunes it. Without it such leases are kept, and gc says how many.
	RetireReview    bool
	ReviewOlderThan time.Duration
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
	staleKept := 0
	for _, x := range all {
		l := x.Lease
		switch {
		case x.ReadOnly():
			continue
		case l.State == Review && !x.StartedElsewhere() && !opts.RetireReview && !l.UpdatedAt.After(cutoff):
			staleKept++
			continue
		case l.State == Review && !x.StartedElsewhere() && opts.RetireReview && !l.UpdatedAt.After(repo.Now().Add(-opts.ReviewOlderThan)):
			line, err := x.retireStale(ctx, opts.DryRun)
			if err != nil {
				return done, err
			}
			done = append(done, line)
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
	if staleKept > 0 {
		done = append(done, fmt.Sprintf("keep %d lease(s) in review past gc's age: gc leaves them to you (git lease reject, or gc --review-older-than AGE, or git config lease.gcReviewAge AGE)", staleKept))
	}
	return done, nil
}

// retireStale rejects a lease left in review past gc's review age and
// cleans it up, and says so (or, with dryRun, would).
func (x *Execution) retireStale(ctx context.Context, dryRun bool) (string, error) {
	what := fmt.Sprintf("reject stale lease %s (in review, last event %s) and clean it up", x.Lease.ID, x.Lease.UpdatedAt.Format(time.DateOnly))
	if dryRun {
		return "would " + what, nil
	}
	reason := fmt.Sprintf("stale: in review with no event since %s (gc's review age)", x.Lease.UpdatedAt.Format(time.DateOnly))
	if err := Reject(ctx, x, reason); err != nil {
		return "", err
	}
	cl, _, err := CleanupLease(ctx, x, CleanupOptions{})
	if err != nil {
		return "", err
	}
	what += ": cleanup " + cl.State
	if kept := x.keptWorktree(); kept != "" {
		what += "; " + kept
	}
	return what, nil
}

// EvictBases removes the exported bases that no lease uses, by the age
// and size cap of trusted policy's [bases] table, and says what it freed
// (or, with dryRun, would free).
func EvictBases(repo *refs.Repo, dryRun bool) ([]string, error) {
	eff, err := policy.LoadForAgent(repo, plumbing.ZeroHash, "")
	if err != nil {
		return nil, err
	}
	b := eff.Bases
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
