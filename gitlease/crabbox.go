package gitlease

import (
	"time"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/sandbox/crabbox"
)

// crabboxProvider is the crabbox provider a lease's recorded policy
// describes: start, cleanup and reconcile all build it from the record, so
// a lease keeps its Crabbox provider, program and bounds for its whole life.
func crabboxProvider(eff *policy.Effective) crabbox.Provider {
	c := eff.Crabbox
	return crabbox.Provider{
		Bin: c.Bin, CrabboxProvider: c.Provider, SandboxedProviders: c.Sandboxed,
		TTL: time.Duration(c.TTL), IdleTimeout: time.Duration(c.IdleTimeout), MaxCopyBytes: int64(c.MaxCopyBytes),
		PassEnv: c.PassEnv,
	}
}
