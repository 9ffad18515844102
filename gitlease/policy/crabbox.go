package policy

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// CrabboxPolicy is the [crabbox] table of trusted policy, used when
// provider = "crabbox": where boxes come from and which Crabbox providers
// count as a sandbox. A .lease.toml may only narrow it: the same provider
// and program, fewer sandboxed providers, a shorter life, a smaller copy.
type CrabboxPolicy struct {
	// Provider is the Crabbox provider every box comes from, for example
	// "local-container". No default: trusted policy must choose it.
	Provider string `toml:"provider" json:"provider"`
	// Sandboxed lists the Crabbox providers that isolate well enough to
	// count as a sandbox (Crabbox itself is not a boundary); Provider must
	// be one of them. Static SSH never counts, listed or not.
	Sandboxed []string `toml:"sandboxed" json:"sandboxed"`
	// Bin is the crabbox program's name, looked up in PATH. Never a path:
	// the record is shared, so it holds no local path.
	Bin string `toml:"bin" json:"bin"`
	// TTL and IdleTimeout bound a box's life; TTL must outlast limits.wall.
	TTL         Duration `toml:"ttl" json:"ttl"`
	IdleTimeout Duration `toml:"idle_timeout" json:"idle_timeout"`
	// MaxCopyBytes bounds the box's work directory (the base and the
	// agent's changes) that is copied back for collection.
	MaxCopyBytes Size `toml:"max_copy_bytes" json:"max_copy_bytes"`
	// PassEnv names the CRABBOX_* variables of the developer's environment
	// that reach crabbox (Crabbox acts on them over its config file); no
	// other does. Trusted policy only.
	PassEnv []string `toml:"pass_env" json:"pass_env,omitempty"`
}

// defaultCrabbox names no Crabbox provider and trusts none: choosing them
// is trusted policy's. The lifetime is Crabbox's own default, and the copy
// is bounded like the default disk limit.
func defaultCrabbox() CrabboxPolicy {
	return CrabboxPolicy{
		Sandboxed: []string{}, Bin: "crabbox",
		TTL: Duration(90 * time.Minute), IdleTimeout: Duration(30 * time.Minute), MaxCopyBytes: defaultDisk,
	}
}

// crabboxVar is what crabbox.pass_env may name.
var crabboxVar = regexp.MustCompile(`^CRABBOX_[A-Z0-9_]+$`)

// programName is what crabbox.bin may be: a program's name, no path.
var programName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// validateCrabbox checks the [crabbox] table: a program named, not a path,
// a bounded life and copy, and a box that lives longer than the agent may
// run.
func (e *Effective) validateCrabbox() error {
	c := e.Crabbox
	bad := func(key string, value any, want string) error {
		return fmt.Errorf("%s = %v (%s): %s", key, value, e.Sources[key], want)
	}
	switch {
	case !programName.MatchString(c.Bin):
		return bad("crabbox.bin", fmt.Sprintf("%q", c.Bin), `name the program as found on PATH, like "crabbox" (the record is shared, so it holds no path; put the program's directory on PATH)`)
	case c.TTL <= 0:
		return bad("crabbox.ttl", c.TTL, "give boxes a lifetime, like 90m")
	case c.IdleTimeout <= 0:
		return bad("crabbox.idle_timeout", c.IdleTimeout, "give boxes an idle timeout, like 30m")
	case slices.ContainsFunc(c.PassEnv, func(n string) bool {
		return !crabboxVar.MatchString(n) || n == "CRABBOX_CONFIG" || n == "CRABBOX_ENV_ALLOW"
	}):
		return bad("crabbox.pass_env", fmt.Sprintf("%q", c.PassEnv), "name CRABBOX_* variables only, never CRABBOX_CONFIG or CRABBOX_ENV_ALLOW (git-lease writes the lease's config itself)")
	case c.MaxCopyBytes <= 0:
		return bad("crabbox.max_copy_bytes", c.MaxCopyBytes, "the copy back from a box must be bounded, like 2GiB")
	case e.Provider == "crabbox" && e.Limits.Wall > 0 && c.TTL <= e.Limits.Wall:
		return bad("crabbox.ttl", c.TTL, fmt.Sprintf("a box must outlive limits.wall = %v (%s); raise crabbox.ttl or lower limits.wall", e.Limits.Wall, e.Sources["limits.wall"]))
	}
	return nil
}
