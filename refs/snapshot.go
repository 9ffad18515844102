package refs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// Snapshot records the checkout's uncommitted changes (tracked and
// untracked, not ignored) as a new commit whose parent is HEAD, without
// touching the checkout, its index or any branch: it uses a private index.
// The commit is reachable only from the lease that uses it.
func (r *Repo) Snapshot(ctx context.Context, message string) (plumbing.Hash, error) {
	head, err := r.ResolveCommit("HEAD")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tmp, err := os.MkdirTemp(r.GitDir, "lease-snapshot-")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"), "GIT_WORK_TREE=" + r.WorkTree}
	if _, err := r.GitAt(ctx, r.GitDir, env, nil, "read-tree", "HEAD"); err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := r.GitAt(ctx, r.GitDir, env, nil, "add", "-A", "--", r.WorkTree); err != nil {
		return plumbing.ZeroHash, err
	}
	out, err := r.GitAt(ctx, r.GitDir, env, nil, "write-tree")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tree := plumbing.NewHash(string(bytes.TrimSpace(out)))
	c, err := r.Commit(head)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if tree == c.TreeHash {
		return plumbing.ZeroHash, fmt.Errorf("--snapshot: the checkout has no uncommitted changes; start without it")
	}
	return r.WriteCommit(tree, []plumbing.Hash{head}, message)
}
