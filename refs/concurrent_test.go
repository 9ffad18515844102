package refs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
)

// TestOneRepoServesManyGoroutines: leases started together in one process
// share one Repo. Each goroutine here appends its own lease log (blobs,
// trees, commits, a ref transaction) and reads it back while the others
// write; under go test -race, go-git's storage and the Repo's caches of
// identity and configuration must not race, and every log must be whole.
func TestOneRepoServesManyGoroutines(t *testing.T) {
	repo, _ := openTestRepo(t, map[string]string{"a": "a"})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := refs.ID(fmt.Sprintf("00000000000%x", i))
			tip := plumbing.ZeroHash
			for n := range 5 {
				repo.Config("user.name")
				files := map[string][]byte{"lease.json": fmt.Appendf(nil, "%s %d", id, n)}
				next, err := repo.Append(ctx, id, tip, files, fmt.Sprintf("lease %s: entry %d\n", id, n))
				if err != nil {
					errs <- err
					return
				}
				tip = next
				b, err := repo.ReadFile(tip, "lease.json", 1<<10)
				if err != nil || string(b) != string(files["lease.json"]) {
					errs <- fmt.Errorf("lease %s entry %d reads back %q: %v", id, n, b, err)
					return
				}
			}
			if entries, err := repo.Log(tip); err != nil || len(entries) != 5 {
				errs <- fmt.Errorf("lease %s has %d log entries: %v", id, len(entries), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
