package gitlease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
)

// addWorktree adds the review worktree at its derived path on the lease's
// branch. A trusted_local agent works in it, so it is added, checked out at
// the base, before the agent starts. A sandboxed lease's agent never sees
// it: it is added (empty) once the agent runs (see stageReview), off the
// way to the agent, or else when the result is checked out into it. It is
// idempotent: a worktree already registered for this lease at that path is
// kept.
func (x *Execution) addWorktree(ctx context.Context) error {
	path := x.Worktree()
	if admin, err := x.worktreeAdmin(); err == nil && admin != "" {
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		// Registered but never made on disk: a runner died inside
		// "git worktree add". git forgets it, and it is added again.
		if _, err := x.Repo.Worktree(ctx, "remove", "--force", path); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	args := []string{"add", "--quiet"}
	if !x.agentWroteWorktree() {
		args = append(args, "--no-checkout")
	}
	_, err := x.Repo.Worktree(ctx, append(args, path, x.Lease.Branch)...)
	return err
}

// worktreeAdmin finds the git directory that git keeps for the review
// worktree (<common>/worktrees/<name>), by its gitdir file pointing back at
// the worktree path. It returns "" when none is registered. The worktree's
// own .git file is never read: the agent may have written it.
func (x *Execution) worktreeAdmin() (string, error) {
	want := filepath.Join(x.Worktree(), ".git")
	dirs, err := os.ReadDir(filepath.Join(x.Repo.CommonDir, "worktrees"))
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, d := range dirs {
		admin := filepath.Join(x.Repo.CommonDir, "worktrees", d.Name())
		b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err == nil && strings.TrimSpace(string(b)) == want {
			return admin, nil
		}
	}
	return "", nil
}

// agentWroteWorktree reports whether the agent worked directly in the
// review worktree (trusted_local), rather than the result being checked
// out into it.
func (x *Execution) agentWroteWorktree() bool {
	return x.Lease.Provider == sandbox.Worktree && x.Lease.RebasedFrom == ""
}

// stagedMarker, in the run directory, says that the review worktree of a
// sandboxed lease may hold the base (or part of it) rather than the result:
// it is written before stageReview checks the base out and removed once
// the result is.
const stagedMarker = "review-at-base"

// stageReview adds a sandboxed lease's review worktree and checks the base
// out into it while the agent works, so that checking the result out
// later writes only what the agent changed (git's one-tree read-tree
// keeps the entries that match). It never delays the agent, and a failure
// only leaves the whole checkout to checkoutReview. checkoutReview, and
// the caller before it returns, wait for it (waitStaged).
func (x *Execution) stageReview(ctx context.Context) {
	if x.agentWroteWorktree() || x.staged != nil {
		return
	}
	if os.WriteFile(filepath.Join(x.RunDir(), stagedMarker), nil, 0o600) != nil {
		return
	}
	done := make(chan struct{})
	x.staged = done
	// Its own copy: Move replaces x.Lease meanwhile (the record it
	// replaces is never written).
	y := &Execution{Repo: x.Repo, Lease: x.Lease}
	go func() {
		defer close(done)
		if y.addWorktree(ctx) != nil {
			return
		}
		if admin, err := y.worktreeAdmin(); err == nil && admin != "" {
			y.Repo.GitAt(ctx, admin, []string{"GIT_WORK_TREE=" + y.Worktree()}, nil, "read-tree", "--reset", "-u", y.Lease.Base)
		}
	}()
}

// waitStaged waits for stageReview's checkout, if one was started.
func (x *Execution) waitStaged() {
	if x.staged != nil {
		<-x.staged
	}
}

// stagedAtBase reports whether the review worktree may hold the base
// rather than the result (see stagedMarker).
func (x *Execution) stagedAtBase() bool {
	_, err := os.Lstat(filepath.Join(x.RunDir(), stagedMarker))
	return err == nil
}

// checkoutReview makes the review worktree show the result. For a
// trusted_local lease the files are already there (the agent wrote them):
// only the index is rewritten from the branch, and git never reads the
// agent-written files. For a sandboxed lease the worktree is added if
// stageReview did not, and the result checked out into it: no agent has
// ever written it.
func (x *Execution) checkoutReview(ctx context.Context) error {
	x.waitStaged()
	if !x.agentWroteWorktree() {
		if err := x.addWorktree(ctx); err != nil {
			return fmt.Errorf("review worktree: %w", err)
		}
	}
	admin, err := x.worktreeAdmin()
	if err != nil || admin == "" {
		return fmt.Errorf("review worktree of %s is not registered with git: run git lease reconcile", x.Lease.ID)
	}
	if x.agentWroteWorktree() {
		_, err = x.Repo.GitAt(ctx, admin, nil, nil, "read-tree", x.Lease.Branch)
		return err
	}
	if _, err = x.Repo.GitAt(ctx, admin, []string{"GIT_WORK_TREE=" + x.Worktree()}, nil, "read-tree", "--reset", "-u", x.Lease.Branch); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(x.RunDir(), stagedMarker)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
