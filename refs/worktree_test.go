package refs_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-lease/git-lease/refs/refstest"
)

// TestConcurrentWorktreeCommandsTakeTurns adds worktrees and lists them
// from many goroutines at once, as leases started together do. Unguarded,
// git fails with "failed to read .../commondir" when one command reads a
// worktree that another is still writing.
func TestConcurrentWorktreeCommandsTakeTurns(t *testing.T) {
	repo, dir := openTestRepo(t, map[string]string{"a": "a"})
	trees := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := repo.Worktree(context.Background(), "add", "--quiet", "--no-checkout", "-b", fmt.Sprintf("b%d", i), filepath.Join(trees, fmt.Sprint(i)), "HEAD")
			errs <- err
			_, err = repo.Worktree(context.Background(), "list", "--porcelain")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := strings.Count(refstest.Git(t, dir, "worktree", "list", "--porcelain"), "worktree "); n != 17 {
		t.Fatalf("git lists %d worktrees, want the checkout and 16 added", n)
	}
}
