//go:build !gitleasetest

package gitlease

import "testing"

// TestReleaseBuildsHaveNoFaultPoints: in a release build the crash tests'
// switch does nothing (in a gitleasetest build this kills the test).
func TestReleaseBuildsHaveNoFaultPoints(t *testing.T) {
	t.Setenv("GIT_LEASE_FAULT", "apply:prepared")
	fault("apply:prepared")
}
