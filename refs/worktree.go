package refs

import (
	"context"
	"os"

	"golang.org/x/sys/unix"
)

// Worktree runs "git worktree <args>" holding the repository's worktree
// lock, an flock on <common>/lease/worktree.lock. git does not guard its
// worktree commands against each other: one that reads every worktree
// while a "worktree add" is still writing one dies with "failed to read
// .../commondir". Leases started at the same time take turns here.
func (r *Repo) Worktree(ctx context.Context, args ...string) ([]byte, error) {
	if err := os.MkdirAll(r.LeaseDir(), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(r.LeaseDir("worktree.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close() // closing drops the lock
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return nil, err
	}
	return r.Git(ctx, nil, append([]string{"worktree"}, args...)...)
}
