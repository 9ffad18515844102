package gitlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

// ErrConflict is returned when a rebase cannot merge the lease's change.
var ErrConflict = errors.New("the change does not merge cleanly")

// Rebase makes the same change on the target branch's new head, as a new
// lease linked to this one (rebased_from) that needs its own review and
// apply. The merge is git's three-way merge of trees, done with plumbing
// (git merge-tree --write-tree), so no work tree is touched. Conflicts are
// recorded on this lease, which stays in review; nothing is materialized.
func Rebase(ctx context.Context, x *Execution, onto string, progress io.Writer) (*Execution, error) {
	if x.Lease.State != Review {
		return nil, fmt.Errorf("lease %s is %s: only a lease in review can be rebased", x.Lease.ID, x.Lease.State)
	}
	if _, err := Signing(x.Repo, progress); err != nil {
		return nil, err
	}
	target, err := x.applyTarget(onto)
	if err != nil {
		return nil, err
	}
	head, err := x.Repo.Ref(target)
	if err != nil || head.IsZero() {
		return nil, fmt.Errorf("branch %s does not exist", strings.TrimPrefix(target, "refs/heads/"))
	}
	if head.String() == x.Lease.Base {
		return nil, fmt.Errorf("%s has not moved since lease %s started: apply it as it is", strings.TrimPrefix(target, "refs/heads/"), x.Lease.ID)
	}
	out, mergeErr := x.Repo.Git(ctx, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", head.String(), x.Lease.Result.Commit)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if mergeErr != nil {
		var ge *refs.GitError
		if !errors.As(mergeErr, &ge) || len(lines) < 2 {
			return nil, mergeErr
		}
		conflicts := lines[1:]
		unlock, err := x.Lock()
		if err != nil {
			return nil, err
		}
		defer unlock()
		err = x.Event(ctx, "rebase-conflict", func(l *Lease) { l.RebaseConflicts = conflicts }, nil)
		return nil, errors.Join(fmt.Errorf("%w onto %s: %s", ErrConflict, strings.TrimPrefix(target, "refs/heads/"), strings.Join(conflicts, ", ")), err)
	}
	merged := plumbing.NewHash(lines[0])
	eff, err := policy.Load(x.Repo, head)
	if err != nil {
		return nil, err
	}
	id, err := newID(x.Repo)
	if err != nil {
		return nil, err
	}
	old := x.Lease
	y := &Execution{Repo: x.Repo, Lease: &Lease{
		Version: RecordVersion, ID: id, Mode: old.Mode, Sandboxed: old.Sandboxed, Provider: old.Provider,
		Base: head.String(), BaseRef: target, Branch: id.Branch(), Mission: old.Mission, Command: old.Command,
		CreatedAt: x.Repo.Now(), Policy: eff, PolicyDigest: eff.Digest(), Checks: old.Checks, RebasedFrom: old.ID,
	}}
	unlock, err := y.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := y.Move(ctx, Provisioning, nil, nil, refs.RefUpdate{Name: id.BranchRef(), New: head}); err != nil {
		return nil, err
	}
	if err := x.linkSuccessor(ctx, id); err != nil {
		return y, y.fail(ctx, err.Error(), err)
	}
	fmt.Fprintf(progress, "lease %s: rebase of %s onto %s\n", id, old.ID, head.String()[:12])
	if err := y.Move(ctx, Collecting, nil, nil); err != nil {
		return y, err
	}
	c, err := describe(ctx, y.Repo, head, mustTree(y.Repo, head), merged)
	if err != nil {
		return y, y.fail(ctx, err.Error(), err)
	}
	return y, y.verifyBuilt(ctx, c, progress)
}

// linkSuccessor records on x, which stays in review, the lease that a
// rebase of it made: the one to review now.
func (x *Execution) linkSuccessor(ctx context.Context, id refs.ID) error {
	unlock, err := x.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	return x.Event(ctx, "rebased", func(l *Lease) { l.RebasedTo = id }, nil)
}

// verifyBuilt records a result built without an agent (a rebase) and takes
// it through verification, checks and review.
func (x *Execution) verifyBuilt(ctx context.Context, c *collected, progress io.Writer) error {
	base := plumbing.NewHash(x.Lease.Base)
	commit, err := x.Repo.WriteCommit(c.Tree, []plumbing.Hash{base}, refs.BranchMessage(x.Lease.ID, x.Lease.Mission, summarize(c.Manifest.Files), base.String(), string(x.Lease.RebasedFrom)))
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	result := &Result{Status: ResultOK, Summary: summarize(c.Manifest.Files), Base: x.Lease.Base, Commit: commit.String(), Tree: c.Tree.String(),
		Manifest: c.Manifest.Files, PatchDigest: verify.PatchDigest(c.Patch), Checks: []CheckResult{}, Artifacts: []Artifact{}}
	files := map[string][]byte{manifestFile: c.Manifest.Marshal(), patchFile: c.Patch}
	findings, err := checkResult(x.Repo, x.Lease.Policy.VerifyPolicy(), c)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	if len(findings) > 0 && !x.acceptable(findings) {
		return x.quarantine(ctx, result, findings, nil, nil, files, progress)
	}
	files[resultFile] = result.marshal()
	if err := x.Move(ctx, Verifying, func(l *Lease) { l.Result = result; l.addFindings(findings) }, files); err != nil {
		return err
	}
	return x.checkAndReview(ctx, progress)
}

func mustTree(repo *refs.Repo, commit plumbing.Hash) plumbing.Hash {
	c, err := repo.Commit(commit)
	if err != nil {
		return plumbing.ZeroHash
	}
	return c.TreeHash
}
