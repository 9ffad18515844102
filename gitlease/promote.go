package gitlease

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/git-lease/git-lease/refs"
)

// promote builds a new result commit on the base holding only the
// manifest's changes at or under the given paths, verifies it like any
// result, and returns it with its manifest for the log and the promoted
// paths. A path that names no change is an error.
func (x *Execution) promote(ctx context.Context, only []string) (plumbing.Hash, map[string][]byte, []string, error) {
	base := plumbing.NewHash(x.Lease.Base)
	baseCommit, err := x.Repo.Commit(base)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	var edits []refs.TreeEdit
	var picked []string
	for _, want := range only {
		want = strings.Trim(want, "/")
		matched := false
		for _, f := range x.Lease.Result.Manifest {
			if f.Path != want && !strings.HasPrefix(f.Path, want+"/") {
				continue
			}
			matched = true
			if x.Lease.State == Quarantined && x.flagged(f.Path) {
				return plumbing.ZeroHash, nil, nil, fmt.Errorf("--only %s: %s is named by a finding of quarantined lease %s (see git lease findings %s); it can only be taken by hand", want, f.Path, x.Lease.ID, x.Lease.ID.Short())
			}
			picked = append(picked, f.Path)
			if f.Status == "D" {
				edits = append(edits, refs.TreeEdit{Path: f.Path, Delete: true})
				continue
			}
			mode, err := filemode.New(f.NewMode)
			if err != nil {
				return plumbing.ZeroHash, nil, nil, err
			}
			edits = append(edits, refs.TreeEdit{Path: f.Path, Mode: mode, Hash: plumbing.NewHash(f.NewBlob)})
		}
		if !matched {
			return plumbing.ZeroHash, nil, nil, fmt.Errorf("--only %s: the lease did not change that path (see git lease show %s)", want, x.Lease.ID.Short())
		}
	}
	tree, err := x.Repo.WriteTreeOrEmpty(baseCommit.TreeHash, edits)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	c, err := describe(ctx, x.Repo, base, baseCommit.TreeHash, tree)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	findings, err := checkResult(x.Repo, x.Lease.Policy.VerifyPolicy(), c)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	if len(findings) > 0 {
		return plumbing.ZeroHash, nil, nil, fmt.Errorf("%w: the promoted result breaks %s", ErrNotVerified, findings[0].Error())
	}
	commit, err := x.Repo.WriteCommit(tree, []plumbing.Hash{base}, refs.BranchMessage(x.Lease.ID, x.Lease.Mission, fmt.Sprintf("promote %d of %d changes", len(c.Manifest.Files), len(x.Lease.Result.Manifest)), base.String(), ""))
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	files := map[string][]byte{"result/promoted.json": c.Manifest.Marshal(), "result/promoted.diff": c.Patch}
	return commit, files, picked, nil
}

// flagged reports whether a finding of the lease names path.
func (x *Execution) flagged(path string) bool {
	for _, f := range x.Lease.Findings {
		if f.Path == path {
			return true
		}
	}
	return false
}
