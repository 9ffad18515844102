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
// reaches Crabbox. Crabbox's own sync is never used (it skips committed
// files under node_modules, .cache, .venv and what .crabboxignore names,
// and keeps its state in .crabbox/ inside its work directory): the box gets
// the base as a tarball uploaded with `crabbox cp`, unpacked in a directory
// git-lease names (boxDir), and the result comes back as a tarball of that
// tree, so modes and symlinks survive both ways. The lease's directory
// holds:
//
//	crabbox.yaml  the whole Crabbox config, written from this Provider
//	state/        XDG_STATE_HOME: Crabbox's local claims for this lease only
//	seed/         the base tree as one commit; crabbox runs from here
//	asked         the ID a warmup requested, until Crabbox refuses it
//	box.json      the leased box's ID, written as soon as Crabbox prints it
//	outbox/       what Release uploads: git-lease-<ID>/ with base.tar and prompt
//	run.json      the finished run's timing report
//	agent.env     the agent's environment while it runs
//	agent.stdout  the agent's standard output (crabbox --capture-stdout)
//	agent.stderr  the agent's standard error (crabbox --capture-stderr)
//	incoming/     the result tarball in transfer
//	delta/        the unpacked result: what Delta points at
//
// The contract was read from Crabbox 0.46.0 (commit 0bba5f7d) and run
// against it (README, "Tested against the real program"); 0.44.0 or later
// is required. Tests use a stand-in (testdata/crabbox-standin) and, when a
// crabbox and sshd are installed, the real CLI over its static-SSH
// provider (TestRealCrabbox).
package crabbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
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

	// testOnlyStaticSSH lets the contract test (TestRealCrabbox) lease a
	// loopback sshd through Crabbox's static SSH provider, which runs the
	// same copy and run path as the providers that isolate. Nothing outside
	// this package's tests can set it.
	testOnlyStaticSSH bool
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
func (Provider) Name() sandbox.ProviderName { return sandbox.Crabbox }

// Sandboxed is true: Create refuses every Crabbox provider that trusted
// policy does not count as sandboxed.
func (Provider) Sandboxed() bool { return true }

// staticSSH names Crabbox's static SSH provider and its aliases: it leases
// the user's own hosts, with no isolation at all.
var staticSSH = []string{"ssh", "static", "static-ssh"}

// providerName is compiled on first use: a counted repetition compiles into a program
// of one node per count, milliseconds that every start of the binary (the
// sandbox's init included) would pay.
var providerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`) })

var executionID = regexp.MustCompile(`^[0-9a-f]{12}$`)

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
	case !providerName().MatchString(p.CrabboxProvider):
		return fmt.Errorf("%w: crabbox provider %q is not a provider name; set crabbox.provider in trusted policy (for example local-container)", sandbox.ErrUnavailable, p.CrabboxProvider)
	case slices.Contains(staticSSH, p.CrabboxProvider) && !p.testOnlyStaticSSH:
		return fmt.Errorf("%w: crabbox provider %q is static SSH, which runs the agent on an existing host with no isolation; pick a provider that isolates (for example local-container) or use --mode trusted_local knowingly", sandbox.ErrUnavailable, p.CrabboxProvider)
	case !slices.Contains(p.SandboxedProviders, p.CrabboxProvider):
		return fmt.Errorf("%w: crabbox provider %q is not one that trusted policy counts as sandboxed (Crabbox itself is not a boundary; isolation is the provider's); add it to crabbox.sandboxed in trusted policy if it isolates", sandbox.ErrUnavailable, p.CrabboxProvider)
	case slices.Contains(delegated, p.CrabboxProvider):
		return fmt.Errorf("%w: crabbox provider %q runs commands through a delegated service, not a box Crabbox reaches over SSH; git-lease has no contract test for delegated providers yet, so it does not use them", sandbox.ErrUnavailable, p.CrabboxProvider)
	case boundary[p.CrabboxProvider] == "":
		return fmt.Errorf("%w: crabbox provider %q is not one git-lease knows (it was checked against Crabbox 0.46.0's providers under their own names, not aliases); name the provider as Crabbox lists it", sandbox.ErrUnavailable, p.CrabboxProvider)
	case !p.testOnlyStaticSSH && boundary[p.CrabboxProvider] == "none":
		return fmt.Errorf("%w: crabbox provider %q gives no isolation of its own; pick a provider that isolates (for example local-container)", sandbox.ErrUnavailable, p.CrabboxProvider)
	}
	return nil
}

// paths are the places of one lease under spec.Dir (see the package doc).
type paths struct {
	config, state, seed, asked, box, outbox, run, env, stdout, stderr, incoming, delta string
}

func layout(spec sandbox.Spec) paths {
	at := func(name string) string { return filepath.Join(spec.Dir, name) }
	return paths{
		config: at("crabbox.yaml"), state: at("state"), seed: at("seed"), asked: at("asked"), box: at("box.json"),
		outbox: at("outbox"), run: at("run.json"), env: at("agent.env"), stdout: at("agent.stdout"), stderr: at("agent.stderr"),
		incoming: at("incoming"), delta: at("delta"),
	}
}

// boxDir is the directory git-lease names on a box for a lease: base.tar
// and prompt (uploaded at Release), tree/ (the base unpacked, where the
// agent works) and result.tar (tree/ packed once the agent has ended). It is
// outside Crabbox's work directory, so nothing of Crabbox's is in it.
func boxDir(spec sandbox.Spec) string { return "/tmp/git-lease-" + spec.ID }
