package refs_test

import (
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

func TestPackedRefReadsOnlyThePackedValue(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	repo, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	head := refstest.Git(t, dir, "rev-parse", "HEAD")
	refstest.Git(t, dir, "update-ref", "refs/leases/0123456789ab", head)
	if got, err := repo.PackedRef("refs/leases/0123456789ab"); err != nil || !got.IsZero() {
		t.Fatalf("a loose ref: %v %v", got, err)
	}
	refstest.Git(t, dir, "pack-refs", "--all")
	refstest.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "next")
	refstest.Git(t, dir, "update-ref", "refs/leases/0123456789ab", "HEAD") // loose again, at another commit
	if got, err := repo.PackedRef("refs/leases/0123456789ab"); err != nil || got.String() != head {
		t.Fatalf("the packed value: %v %v, want %s", got, err, head)
	}
	if got, err := repo.PackedRef("refs/leases/0123456789"); err != nil || !got.IsZero() {
		t.Fatalf("a prefix of a packed name: %v %v", got, err)
	}
}
