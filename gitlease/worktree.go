package gitlease

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// addWorktree adds the review worktree at its derived path, checked out on
// the lease's branch. It is idempotent: a worktree already registered for
// this lease at that path is kept.
func (x *Execution) addWorktree(ctx context.Context) error {
	path := x.Worktree()
	if admin, err := x.worktreeAdmin(); err == nil && admin != "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	_, err := x.Repo.Git(ctx, nil, "worktree", "add", "--quiet", path, x.Lease.Branch)
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

// syncWorktree makes the review worktree's index match its branch, so that
// git status there shows what the reviewer changes on top of the result. It
// only reads objects and writes the index: git never reads the worktree's
// files here, which the agent may have written.
func (x *Execution) syncWorktree(ctx context.Context) error {
	admin, err := x.worktreeAdmin()
	if err != nil || admin == "" {
		return fmt.Errorf("review worktree of %s is not registered with git: run git lease reconcile", x.Lease.ID)
	}
	_, err = x.Repo.GitAt(ctx, admin, nil, nil, "read-tree", x.Lease.Branch)
	return err
}
