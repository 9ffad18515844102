//go:build !gitleasetest

package refs

import "testing"

// TestReleaseIDsIgnoreTheTestSeed: a release build's IDs are random even
// when the transcript tests' seed variable is set (it is a test switch,
// compiled only into gitleasetest builds).
func TestReleaseIDsIgnoreTheTestSeed(t *testing.T) {
	t.Setenv("GIT_LEASE_TEST_ID_SEED", "x")
	seen := map[ID]bool{}
	for i := 0; i < 100; i++ {
		id, err := NewID(func(ID) bool { return false })
		if err != nil {
			t.Fatal(err)
		}
		seen[id] = true
	}
	if len(seen) < 99 {
		t.Fatalf("100 IDs gave only %d distinct values", len(seen))
	}
}
