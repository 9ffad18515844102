//go:build gitleasetest

package gitlease

import (
	"os"
	"syscall"
)

// faultEnv names a fault point at which git-lease kills itself with SIGKILL.
// The crash tests use it to prove that reconcile repairs every step. It is
// compiled only into binaries built with the gitleasetest tag.
const faultEnv = "GIT_LEASE_FAULT"

// fault dies at the named point when faultEnv asks for it.
func fault(point string) {
	if os.Getenv(faultEnv) == point {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
