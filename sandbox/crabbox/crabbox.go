// Package crabbox runs agents in boxes leased through the Crabbox CLI
// (github.com/openclaw/crabbox): cloud VMs, containers or microVMs. Crabbox
// itself is not a boundary between mutually untrusted parties; the
// isolation is the Crabbox provider's. So only the providers trusted policy
// names as sandboxed are accepted, and static SSH never is.
//
// Every crabbox invocation for a lease runs with the lease's own config file
// (CRABBOX_CONFIG) and state directory (XDG_STATE_HOME), both under
// spec.Dir, and from a fresh git repository that holds exactly the base
// tree, so neither the developer's checkout nor the task's own .crabbox.yaml
// reaches Crabbox. The lease's directory holds:
//
//	crabbox.yaml  the whole Crabbox config, written from this Provider
//	state/        XDG_STATE_HOME: Crabbox's local claims for this lease only
//	seed/         the base tree as one commit; Crabbox syncs and runs from here
//	asked         the ID a warmup requested, until Crabbox refuses it
//	box.json      the leased box's ID, written as soon as Crabbox prints it
//	run.json      the finished run's timing report (its remote work directory)
//	agent.env     the agent's environment while it runs
//	incoming/     a copy of the box's work directory in transfer
//	delta/        the collected copy: what Delta points at
//
// The contract was read from Crabbox 0.46.0 (commit 0bba5f7d); 0.44.0 or
// later is required. Tests use a stand-in (testdata/crabbox-standin). To
// try the real CLI: install crabbox and Docker, check `crabbox doctor
// --provider local-container`, and give this Provider CrabboxProvider
// "local-container" with "local-container" in SandboxedProviders.
package crabbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// Provider leases boxes from one Crabbox provider.
type Provider struct {
	// Bin is the crabbox program; empty means "crabbox" found in PATH.
	Bin string
	// CrabboxProvider is the Crabbox provider every box comes from, for
	// example "local-container".
	CrabboxProvider string
	// SandboxedProviders lists the Crabbox providers trusted policy counts
	// as sandboxed. CrabboxProvider must be one of them.
	SandboxedProviders []string
	// TTL and IdleTimeout bound a box's life; zero leaves Crabbox's
	// defaults (90m and 30m).
	TTL, IdleTimeout time.Duration
	// MaxCopyBytes bounds the work directory Collect copies back; zero
	// means no bound.
	MaxCopyBytes int64
	// PassEnv names the CRABBOX_* variables of the host's environment that
	// reach crabbox (for example CRABBOX_COORDINATOR_TOKEN for a broker);
	// no other CRABBOX_* variable does. CRABBOX_CONFIG and
	// CRABBOX_ENV_ALLOW never pass.
	PassEnv []string
}

var (
	// ErrLeaseIDConflict is returned by Create when Crabbox already holds
	// the lease's box ID for a box this lease did not lease, with a
	// different create intent (another provider, lifetime or slug), or as
	// released.
	ErrLeaseIDConflict = errors.New("crabbox lease ID conflict")
	// ErrNoBox is returned when no box is recorded for a lease: Create has
	// not leased one.
	ErrNoBox = errors.New("no crabbox box recorded for this lease")
)

var (
	_ sandbox.Provider   = Provider{}
	_ sandbox.Collector  = Provider{}
	_ sandbox.Identifier = Provider{}
)

// Name is "crabbox".
func (Provider) Name() string { return "crabbox" }

// Sandboxed is true: Create refuses every Crabbox provider that trusted
// policy does not count as sandboxed.
func (Provider) Sandboxed() bool { return true }

// staticSSH names Crabbox's static SSH provider and its aliases: it leases
// the user's own hosts, with no isolation at all.
var staticSSH = []string{"ssh", "static", "static-ssh"}

var (
	providerName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	executionID  = regexp.MustCompile(`^[0-9a-f]{12}$`)
)

// Check refuses, before anything is created, a Crabbox provider that
// trusted policy does not count as sandboxed and a missing crabbox binary.
// (Its version and login are probed by Create.)
func (p Provider) Check() error {
	if err := p.checkProvider(); err != nil {
		return err
	}
	_, err := p.bin()
	return err
}

// check refuses what must never reach Crabbox: a bad lease ID and a
// provider that policy does not count as sandboxed.
func (p Provider) check(spec sandbox.Spec) error {
	if !executionID.MatchString(spec.ID) {
		return fmt.Errorf("bad execution ID %q: want 12 lowercase hex characters", spec.ID)
	}
	return p.checkProvider()
}

func (p Provider) checkProvider() error {
	switch {
	case !providerName.MatchString(p.CrabboxProvider):
		return fmt.Errorf("%w: crabbox provider %q is not a provider name; set crabbox.provider in trusted policy (for example local-container)", sandbox.ErrUnavailable, p.CrabboxProvider)
	case slices.Contains(staticSSH, p.CrabboxProvider):
		return fmt.Errorf("%w: crabbox provider %q is static SSH, which runs the agent on an existing host with no isolation; pick a provider that isolates (for example local-container) or use --mode trusted_local knowingly", sandbox.ErrUnavailable, p.CrabboxProvider)
	case !slices.Contains(p.SandboxedProviders, p.CrabboxProvider):
		return fmt.Errorf("%w: crabbox provider %q is not one that trusted policy counts as sandboxed (Crabbox itself is not a boundary; isolation is the provider's); add it to crabbox.sandboxed in trusted policy if it isolates", sandbox.ErrUnavailable, p.CrabboxProvider)
	}
	return nil
}

// paths are the places of one lease under spec.Dir (see the package doc).
type paths struct {
	config, state, seed, asked, box, run, env, incoming, delta string
}

func layout(spec sandbox.Spec) paths {
	at := func(name string) string { return filepath.Join(spec.Dir, name) }
	return paths{
		config: at("crabbox.yaml"), state: at("state"), seed: at("seed"), asked: at("asked"), box: at("box.json"),
		run: at("run.json"), env: at("agent.env"), incoming: at("incoming"), delta: at("delta"),
	}
}
