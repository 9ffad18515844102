package gitlease

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/netproxy"
	"github.com/git-lease/git-lease/verify"
)

// prepareLaunch applies start's request to the lease's policy (the agent
// preset, --net, --credential), which then records what the lease
// receives, and returns the command to record (a preset's, with its
// {prompt} left in) and the credentials' records. It reads every value
// once, so that a missing credential fails the start before anything is
// created.
func prepareLaunch(eff *policy.Effective, opts StartOptions, sandboxed bool) ([]string, []CredentialRecord, error) {
	command := opts.Command
	if p := eff.Agent(); p != nil {
		if p.TakesPrompt() && opts.Prompt == "" {
			return nil, nil, fmt.Errorf("agent %s needs a prompt: give it with --prompt TEXT or --prompt-file FILE", p.Name)
		}
		command = p.Command
	}
	if !sandboxed {
		if len(opts.Net) > 0 || len(opts.Credentials) > 0 {
			return nil, nil, errors.New("--net and --credential apply to sandboxed leases: a trusted_local agent runs with your own network and environment")
		}
		return command, nil, nil
	}
	if err := eff.SelectNetwork(opts.Net); err != nil {
		return nil, nil, err
	}
	if err := eff.SelectCredentials(opts.Credentials); err != nil {
		return nil, nil, err
	}
	if _, err := eff.LeaseAllowlist(); err != nil {
		return nil, nil, err
	}
	creds, err := resolveCredentials(eff)
	if err != nil {
		return nil, nil, err
	}
	var records []CredentialRecord
	for _, c := range creds {
		records = append(records, c.CredentialRecord)
	}
	return command, records, nil
}

// launch is what a lease's agent starts with beyond its record: its
// command with the prompt put in, its preset's environment and Herdr kind,
// its credentials' values and its proxy's allowlist (with the wildcard
// marks that the allowlist's text does not keep). None of it is written to
// the log.
type launch struct {
	command    []string
	env        []string
	homeFiles  map[string]string // the preset's, by path in the home
	herdrAgent string            // the preset's Herdr agent kind
	creds      []credential
	allow      netproxy.Allowlist
}

// launchFor rebuilds the launch in the process that runs the agent (which
// may be a runner started apart from git lease start): from the record and
// trusted policy, read again. A credential whose value no longer matches
// its recorded fingerprint, or a destination trusted policy no longer
// allows, fails the lease rather than run it with something else.
func (x *Execution) launchFor(provider sandbox.Provider) (*launch, error) {
	l := &launch{command: x.Lease.Command}
	access := provider.Sandboxed() && len(x.Lease.Credentials)+len(x.Lease.Policy.Network.Allow) > 0
	if x.Lease.AgentPreset == "" && !access {
		return l, nil
	}
	trusted, err := policy.LoadForAgent(x.Repo, plumbing.ZeroHash, x.Lease.AgentPreset)
	if err != nil {
		return nil, err
	}
	if p := trusted.Agent(); p != nil {
		if !slices.Equal(p.Command, x.Lease.Command) || !slices.Equal(p.EnvNames(), x.Lease.AgentEnv) || !slices.Equal(p.HomePaths(), x.Lease.AgentHomeFiles) {
			return nil, fmt.Errorf("agent preset %s changed since the lease started (its command, environment or home files): start a new lease", p.Name)
		}
		l.env, l.homeFiles, l.herdrAgent = p.Environ(), p.HomeFiles, p.HerdrAgent
		if x.promptInCommand() {
			prompt, err := os.ReadFile(x.promptPath())
			if err != nil {
				return nil, fmt.Errorf("agent %s needs its prompt: %w", p.Name, err)
			}
			l.command = policy.WithPrompt(x.Lease.Command, string(prompt))
		}
	}
	if !access {
		return l, nil
	}
	trusted.Network.Allow = x.Lease.Policy.Network.Allow // as the trusted allowlist admits it
	if l.allow, err = trusted.LeaseAllowlist(); err != nil {
		return nil, fmt.Errorf("the lease's network allowlist: %w (your trusted policy changed since the lease started)", err)
	}
	if l.creds, err = x.readCredentials(trusted); err != nil {
		return nil, err
	}
	return l, nil
}

// readCredentials reads the values of the lease's recorded credentials
// again, from the host as trusted policy names them, and fails if one no
// longer matches its recorded fingerprint.
func (x *Execution) readCredentials(trusted *policy.Effective) ([]credential, error) {
	trusted.Credentials = nil
	for _, r := range x.Lease.Credentials {
		trusted.Credentials = append(trusted.Credentials, r.Name)
	}
	creds, err := resolveCredentials(trusted)
	if err != nil {
		return nil, err
	}
	for i, c := range creds {
		if c.CredentialRecord != x.Lease.Credentials[i] {
			return nil, fmt.Errorf("credential %s changed since the lease started (%s, now %s %s): start a new lease", c.Name, x.Lease.Credentials[i].Fingerprint, c.Kind, c.Fingerprint)
		}
	}
	return creds, nil
}

// access is a running lease's network and credentials on the host: its
// proxy, and its copies of credential files.
type access struct {
	x      *Execution
	net    *leaseNetwork
	redact redactor
	closed bool
}

// openAccess starts the lease's proxy and delivers its credentials,
// adding both to the sandbox spec and the agent's command.
func (x *Execution) openAccess(l *launch, spec *sandbox.Spec, cmd *sandbox.Command) (*access, error) {
	a := &access{x: x, redact: redactor(l.creds)}
	if a.net = startNetwork(l.allow); a.net != nil {
		spec.Proxy = a.net.proxy
	}
	env, files, err := x.deliverCredentials(l.creds)
	if err != nil {
		a.close(nil)
		return nil, fmt.Errorf("credentials: %w", err)
	}
	spec.Binds = append(spec.Binds, files...)
	cmd.Env = append(cmd.Env, env...)
	return a, nil
}

// close stops the proxy and removes the credential files, then returns
// the lease's network record, the log files of its evidence and the
// network's findings. proc, when not nil, is the agent's ended sandbox,
// whose network stack's refusals count too. Only the first call does
// anything.
func (a *access) close(proc sandbox.Process) (*NetworkRecord, map[string][]byte, []verify.Finding) {
	if a.closed {
		return nil, map[string][]byte{}, nil
	}
	a.closed = true
	os.RemoveAll(filepath.Join(a.x.RunDir(), credentialsDir))
	var bypass sandbox.Bypass
	if bc, ok := proc.(sandbox.BypassCounter); ok {
		bypass = bc.Bypass()
	}
	return networkEvidence(a.net, bypass, a.redact)
}
