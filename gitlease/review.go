package gitlease

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/verify"
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

// verifyRecorded checks the recorded result against itself and the
// repository: patch digest, patch headers against the manifest, base +
// patch against the result tree, the result commit, and the review branch.
// It needs only the log and the objects, so it works after cleanup.
func (x *Execution) verifyRecorded(ctx context.Context) (*ReviewReport, error) {
	r := x.Lease.Result
	if r == nil || r.Tree == "" {
		return nil, fmt.Errorf("lease %s has no collected result (it is %s)", x.Lease.ID, x.Lease.State)
	}
	rep := &ReviewReport{ID: string(x.Lease.ID), Problems: []string{}, Worktree: []string{}}
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	patch, err := x.Patch()
	if err != nil {
		return nil, err
	}
	if got := verify.PatchDigest(patch); got != r.PatchDigest {
		problem("patch digest is %s, the record says %s", got, r.PatchDigest)
	}
	rep.Checked = append(rep.Checked, "patch digest")
	mb, err := x.Repo.ReadFile(x.Tip, manifestFile, maxPatch)
	if err != nil {
		return nil, err
	}
	manifest, err := verify.ParseManifest(mb)
	if err != nil {
		problem("manifest: %v", err)
	} else if parsed, err := verify.ParsePatch(patch); err != nil {
		problem("patch: %v", err)
	} else if err := verify.CheckPatchManifest(parsed, manifest); err != nil {
		problem("patch and manifest disagree: %v", err)
	}
	rep.Checked = append(rep.Checked, "patch headers = manifest")
	derived, err := x.deriveTree(ctx, patch)
	if err != nil {
		problem("the patch does not apply to the base: %v", err)
	} else {
		rep.Derived = derived.String()
		if derived.String() != r.Tree {
			problem("base + patch gives tree %s, the record says %s", derived, r.Tree)
		}
		if manifest != nil {
			base, _ := x.Repo.Commit(plumbing.NewHash(r.Base))
			if base != nil {
				if c, err := describe(ctx, x.Repo, base.Hash, base.TreeHash, derived); err == nil && !slices.Equal(c.Manifest.Files, manifest.Files) {
					problem("the changes from base to the derived tree are not the manifest's")
				}
			}
		}
	}
	rep.Checked = append(rep.Checked, "base + patch = result tree = manifest")
	switch c, err := x.Repo.Commit(plumbing.NewHash(r.Commit)); {
	case !x.Lease.holdsResult() && !x.Repo.HasObject(plumbing.NewHash(r.Commit)):
		// As in verify: a result that never reached review is not pushed.
		rep.Checked = append(rep.Checked, "no result commit here (a "+string(x.Lease.State)+" result is never pushed)")
	case err != nil || c.TreeHash.String() != r.Tree || len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != r.Base:
		problem("result commit %s is not the result tree on the base", r.Commit)
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

// deriveTree applies the patch to the base in a private index (git apply
// --cached: no work tree is read or written) and writes the tree.
func (x *Execution) deriveTree(ctx context.Context, patch []byte) (plumbing.Hash, error) {
	tmp, err := os.MkdirTemp(x.Repo.LeaseDir(), "review-")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := x.Repo.GitEnv(ctx, env, nil, "read-tree", x.Lease.Result.Base); err != nil {
		return plumbing.ZeroHash, err
	}
	if len(patch) > 0 {
		if _, err := x.Repo.GitEnv(ctx, env, patch, "apply", "--cached", "--binary", "--whitespace=nowarn", "-"); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	out, err := x.Repo.GitEnv(ctx, env, nil, "write-tree")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return plumbing.NewHash(string(bytes.TrimSpace(out))), nil
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
