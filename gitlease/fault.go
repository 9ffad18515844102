//go:build !gitleasetest

package gitlease

// fault marks a step at which the crash tests kill git-lease
// (fault_points.go, in gitleasetest builds only). A release build never
// dies there, whatever its environment says.
func fault(string) {}
