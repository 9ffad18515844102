package refs

import (
	"context"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Locked runs fn holding the repository lock named name, an flock on
// <common>/lease/<name>.lock that waits for the holder. The kernel drops
// it when its process dies, so a crash never leaves it held.
func (r *Repo) Locked(name string, fn func() error) error {
	if err := os.MkdirAll(r.LeaseDir(), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(r.LeaseDir(name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close() // closing drops the lock
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	return fn()
}

// Worktree runs "git worktree <args>" holding the repository's worktree
// lock. git does not guard its worktree commands against each other: one
// that reads every worktree while a "worktree add" is still writing one
// dies with "failed to read .../commondir". Leases started at the same
// time take turns here.
func (r *Repo) Worktree(ctx context.Context, args ...string) (out []byte, err error) {
	err = r.Locked("worktree", func() error {
		out, err = r.Git(ctx, nil, append([]string{"worktree"}, args...)...)
		return err
	})
	return out, err
}

// CheckedOut maps each branch checked out in a worktree of the repository
// (refs/heads/…) to that worktree's path.
func (r *Repo) CheckedOut(ctx context.Context) (map[string]string, error) {
	out, err := r.Worktree(ctx, "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	branches := map[string]string{}
	for _, block := range strings.Split(string(out), "\n\n") {
		var path string
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "worktree "); ok {
				path = v
			}
			if b, ok := strings.CutPrefix(line, "branch "); ok {
				branches[b] = path
			}
		}
	}
	return branches, nil
}
