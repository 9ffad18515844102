//go:build gitleasetest

package refs

import "os"

// testSeedEnv makes ID generation deterministic in binaries built with the
// gitleasetest tag (the transcript tests' git-lease): IDs derive from the
// seed and the first unused counter value. Release builds ignore it.
const testSeedEnv = "GIT_LEASE_TEST_ID_SEED"

func idSource() func(int) (ID, error) {
	if seed := os.Getenv(testSeedEnv); seed != "" {
		return seededID(seed)
	}
	return randomID
}
