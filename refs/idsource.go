//go:build !gitleasetest

package refs

// idSource gives IDs from the CSPRNG only. The switch that makes them
// predictable for transcript tests (idsource_seeded.go) is compiled only
// into binaries built with the gitleasetest tag.
func idSource() func(int) (ID, error) { return randomID }
