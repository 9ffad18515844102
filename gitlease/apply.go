package gitlease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

var (
	// ErrTargetMoved is returned when the branch to apply to is no longer
	// at the lease's base: the result was reviewed against another tree.
	ErrTargetMoved = errors.New("the target branch moved since the lease started")
	// ErrNotVerified is returned when a result no longer verifies.
	ErrNotVerified = errors.New("the result does not verify")
)

// ApplyOptions are the inputs of git lease apply.
type ApplyOptions struct {
	// Onto is the branch to move; "" means the branch the base came from.
	Onto string
	// Only promotes just these paths (files or directories of the manifest).
	Only []string
	// Accept accepts the findings that policy lets wait for acceptance at
	// apply (result.accept_at_apply); without it such a lease is refused.
	Accept bool
	// Message, when set, is the message of the commit the target moves
	// to: the result's tree committed again on the same parents, by the
	// user's identity, with a Lease-ID trailer.
	Message string
}

// Apply moves the target branch to the lease's result in one update-ref
// transaction that also checks the branch is still at the base and records
// applied in the lease log: a fast-forward by construction, never forced.
// The result is verified again first. When the target is checked out in
// the user's own checkout, that checkout must be clean and is updated as
// git merge --ff-only would; a target checked out anywhere else is refused.
// Hooks never run.
func Apply(ctx context.Context, x *Execution, opts ApplyOptions) error {
	if _, err := Signing(x.Repo, os.Stderr); err != nil {
		return err
	}
	unlock, err := x.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	switch {
	case x.Lease.State == Quarantined && len(x.quarantiningEscapes()) > 0:
		// No path of it is more trustworthy than another.
		return fmt.Errorf("lease %s is quarantined: its agent tried to escape its sandbox (git lease findings %s); its result can only be taken by hand", x.Lease.ID, x.Lease.ID.Short())
	case x.Lease.State == Quarantined && x.Lease.Result != nil && len(x.Lease.Result.Manifest) > 0 && x.Lease.FindingsOmitted == 0:
		if len(opts.Only) == 0 {
			return fmt.Errorf("lease %s is quarantined: take the paths no finding names with git lease apply --only PATH… %s (git lease show %s lists them)", x.Lease.ID, x.Lease.ID.Short(), x.Lease.ID.Short())
		}
	case x.Lease.State != Review:
		return fmt.Errorf("lease %s is %s: only a lease in review can be applied", x.Lease.ID, x.Lease.State)
	}
	var accepted []string
	for _, f := range x.awaitingAcceptance() {
		accepted = append(accepted, string(f.Rule)+" "+f.Path)
	}
	if len(accepted) > 0 && x.Lease.State == Review && !opts.Accept {
		return fmt.Errorf("lease %s changes what policy asks you to accept: %s; review them (git lease diff %s), then git lease apply --accept %s", x.Lease.ID, strings.Join(accepted, ", "), x.Lease.ID.Short(), x.Lease.ID.Short())
	}
	if x.Lease.State != Review || !opts.Accept {
		accepted = nil
	}
	if x.Lease.Result == nil || x.Lease.Result.Tree == "" {
		return fmt.Errorf("lease %s has no collected result (it is %s)", x.Lease.ID, x.Lease.State)
	}
	allowed, err := AllowedSigners(x.Repo, "", true)
	if err != nil {
		return err
	}
	if v := Verify(ctx, x, allowed); !v.OK {
		return fmt.Errorf("lease %s: %w: %s (see git lease verify %s)", x.Lease.ID, ErrNotVerified, strings.Join(v.Problems, "; "), x.Lease.ID.Short())
	}
	target, err := x.applyTarget(opts.Onto)
	if err != nil {
		return err
	}
	recommit := opts.Message != "" || x.byPlaceholder()
	if (recommit || len(opts.Only) > 0) && !x.Repo.HasIdentity() {
		return fmt.Errorf("git has no identity to author the commit that apply puts on %s (it would be git-lease <%s>): set git config user.name and user.email, then apply again", strings.TrimPrefix(target, "refs/heads/"), refs.PlaceholderEmail)
	}

	// Applies take turns from reading the target to updating the checkout:
	// another apply between our check that the checkout is clean and our
	// update of it would make the checkout look dirty, or the target look
	// unmoved, to the loser.
	return x.Repo.Locked("apply", func() error { return x.applyTo(ctx, target, opts, recommit, accepted) })
}

// byPlaceholder reports whether the result commit was authored by
// git-lease's placeholder identity (it was collected where git had none).
func (x *Execution) byPlaceholder() bool {
	c, err := x.Repo.Commit(plumbing.NewHash(x.Lease.Result.Commit))
	return err == nil && c.Author.Email == refs.PlaceholderEmail
}

// recommit commits commit's tree again on its parents, by the user's
// identity, with message and a Lease-ID trailer, or with commit's own
// message when message is "".
func (x *Execution) recommit(commit plumbing.Hash, message string) (plumbing.Hash, error) {
	c, err := x.Repo.Commit(commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	msg := c.Message
	if message != "" {
		msg = refs.AppliedMessage(x.Lease.ID, message)
	}
	return x.Repo.WriteCommit(c.TreeHash, c.ParentHashes, msg)
}

// applyTo does the apply once the result has verified and target is known,
// holding the repository's apply lock.
func (x *Execution) applyTo(ctx context.Context, target string, opts ApplyOptions, recommit bool, accepted []string) error {
	expected := plumbing.NewHash(x.Lease.Base)
	if x.Lease.SnapshotOf != "" {
		expected = plumbing.NewHash(x.Lease.SnapshotOf)
	}
	tip, err := x.Repo.Ref(target)
	if err != nil {
		return err
	}
	if tip.IsZero() {
		return fmt.Errorf("branch %s does not exist", strings.TrimPrefix(target, "refs/heads/"))
	}
	if tip != expected {
		return x.moved(target, tip, expected)
	}
	commit := plumbing.NewHash(x.Lease.Result.Commit)
	files := map[string][]byte{}
	var paths []string
	if len(opts.Only) > 0 {
		if commit, files, paths, err = x.promote(ctx, opts.Only); err != nil {
			return err
		}
	}
	if recommit {
		if commit, err = x.recommit(commit, opts.Message); err != nil {
			return err
		}
	}
	checkout, err := x.checkoutToUpdate(ctx, target, expected, commit)
	if err != nil {
		return err
	}
	fault("apply:prepared")
	app := &Application{Target: target, From: expected.String(), Commit: commit.String(), Paths: paths, Accepted: accepted}
	if files[applyReceipt], err = x.sign(verify.PredicateApply, applyPredicate{x.Lease.ID, app},
		commitSubject(target, app.Commit), commitSubject("from", app.From)); err != nil {
		return err
	}
	err = x.Move(ctx, Applied, func(l *Lease) { l.Applied = app }, files,
		refs.RefUpdate{Name: target, Old: expected, New: commit})
	if errors.Is(err, refs.ErrStale) {
		now, _ := x.Repo.Ref(target)
		if now != expected {
			return x.moved(target, now, expected)
		}
	}
	if err != nil || !checkout {
		return err
	}
	marker := filepath.Join(x.RunDir(), applyCheckoutMarker)
	os.WriteFile(marker, []byte(x.Repo.WorkTree+"\n"), 0o600)
	fault("apply:committed")
	if err := x.updateCheckout(ctx, expected, commit); err != nil {
		return fmt.Errorf("%s moved, but updating your checkout failed: %w (run git lease reconcile)", target, err)
	}
	return os.Remove(marker)
}

func (x *Execution) moved(target string, tip, expected plumbing.Hash) error {
	return fmt.Errorf("%w: %s is at %s, but the lease was made on %s; run git lease rebase %s to make a new result on it",
		ErrTargetMoved, strings.TrimPrefix(target, "refs/heads/"), tip.String()[:12], expected.String()[:12], x.Lease.ID.Short())
}

// applyTarget resolves --onto (or the branch the base came from) to a full
// branch name.
func (x *Execution) applyTarget(onto string) (string, error) {
	if onto == "" {
		if x.Lease.BaseRef == "" {
			return "", fmt.Errorf("lease %s was not started from a branch: give --onto BRANCH", x.Lease.ID)
		}
		return x.Lease.BaseRef, nil
	}
	name := onto
	if !strings.HasPrefix(name, "refs/heads/") {
		name = "refs/heads/" + name
	}
	if plumbing.ReferenceName(name).Validate() != nil || strings.HasPrefix(name, "refs/heads/lease/") {
		return "", fmt.Errorf("--onto %q: name a branch of yours (not a lease branch)", onto)
	}
	return name, nil
}

// checkoutToUpdate decides whether applying must also update the user's
// checkout (the target is checked out there), and refuses a target that is
// checked out in any other worktree, or a checkout that is not clean.
func (x *Execution) checkoutToUpdate(ctx context.Context, target string, from, to plumbing.Hash) (bool, error) {
	checkedOut, err := x.Repo.CheckedOut(ctx)
	if err != nil {
		return false, err
	}
	path := checkedOut[target]
	switch {
	case path == "":
		return false, nil
	case path != x.Repo.WorkTree:
		return false, fmt.Errorf("%s is checked out in %s: apply from there, or --onto another branch (git-lease never writes into another checkout)",
			strings.TrimPrefix(target, "refs/heads/"), path)
	}
	// Checked before anything is recorded: with the branch moved and the
	// checkout not, the user would have to run reconcile.
	lock := filepath.Join(x.Repo.GitDir, "index.lock")
	if _, err := os.Lstat(lock); err == nil {
		return false, fmt.Errorf("your checkout's index is locked (%s exists): another git command is running here, or one crashed and left it; when none runs, remove it, then apply again (nothing was applied)", lock)
	}
	env := []string{"GIT_WORK_TREE=" + x.Repo.WorkTree}
	status, err := x.Repo.GitAt(ctx, x.Repo.GitDir, env, nil, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return false, err
	}
	if len(bytes.TrimSpace(status)) > 0 {
		if interruptedApply(x.Repo) {
			return false, fmt.Errorf("%s is checked out here, and an interrupted git lease apply has not updated it yet: run git lease reconcile", strings.TrimPrefix(target, "refs/heads/"))
		}
		return false, fmt.Errorf("%s is checked out here and has uncommitted changes: commit or stash them first%s", strings.TrimPrefix(target, "refs/heads/"), x.snapshotHint())
	}
	// The dry run works on a copy of the index, so that it never holds the
	// checkout's index lock while one of your own git commands may want it.
	index, err := os.ReadFile(filepath.Join(x.Repo.GitDir, "index"))
	if err != nil {
		return false, err
	}
	tmp, err := os.MkdirTemp(x.Repo.LeaseDir(), "apply-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "index"), index, 0o600); err != nil {
		return false, err
	}
	dry := append(env, "GIT_INDEX_FILE="+filepath.Join(tmp, "index"))
	if _, err := x.Repo.GitAt(ctx, x.Repo.GitDir, dry, nil, "read-tree", "-m", "-u", "-n", from.String(), to.String()); err != nil {
		return false, fmt.Errorf("applying would overwrite files in your checkout: %w%s", err, x.snapshotHint())
	}
	return true, nil
}

// snapshotHint explains why a --snapshot lease meets the uncommitted
// changes it was started from: its result holds them, committed.
func (x *Execution) snapshotHint() string {
	if x.Lease.SnapshotOf == "" {
		return ""
	}
	return fmt.Sprintf(" (lease %s started from a snapshot of your uncommitted changes, and its result commits them: set them aside with git stash -u, apply, and drop the stash if the result has them all; or apply --onto a branch that is not checked out)", x.Lease.ID.Short())
}

// applyCheckoutMarker, in a lease's run directory, names the checkout an
// apply has moved the target of but not yet updated; reconcile finishes.
const applyCheckoutMarker = "apply-checkout"

// interruptedApply reports whether a crashed apply left the user's
// checkout behind its branch.
func interruptedApply(repo *refs.Repo) bool {
	markers, _ := filepath.Glob(repo.LeaseDir("runs", "*", applyCheckoutMarker))
	for _, m := range markers {
		if b, err := os.ReadFile(m); err == nil && strings.TrimSpace(string(b)) == repo.WorkTree {
			return true
		}
	}
	return false
}

// updateCheckout moves the user's index and files from one commit to the
// next, as a fast-forward merge does. Another git process briefly holding
// the index lock is waited out.
func (x *Execution) updateCheckout(ctx context.Context, from, to plumbing.Hash) error {
	env := []string{"GIT_WORK_TREE=" + x.Repo.WorkTree}
	for attempt := 0; ; attempt++ {
		_, err := x.Repo.GitAt(ctx, x.Repo.GitDir, env, nil, "read-tree", "-m", "-u", from.String(), to.String())
		if err == nil || !strings.Contains(err.Error(), "index.lock") || attempt == 50 {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
