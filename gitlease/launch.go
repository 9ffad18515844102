package gitlease

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/netproxy"
	"github.com/git-lease/git-lease/verify"
)

// launch is what a lease's agent starts with beyond its record: the values
// of its credentials and its proxy's allowlist (with wildcard marks that
// its text does not keep). None of it is written to the log.
type launch struct {
	command []string
	env     []string // the agent preset's fixed environment
	creds   []credential
	allow   netproxy.Allowlist
}

// prepareLaunch applies start's request to the lease's policy (the agent
// preset, --net, --credential), which then records what the lease
// receives, and reads the credentials' values. Nothing is created.
func prepareLaunch(eff *Effective, opts StartOptions, sandboxed bool) (*launch, error) {
	l := &launch{command: opts.Command}
	switch p := eff.agent; {
	case p != nil:
		cmd, err := p.command(opts.Prompt)
		if err != nil {
			return nil, err
		}
		if _, err := findAgent(cmd[0], eff.ReadOnly, sandboxed); err != nil {
			return nil, err
		}
		l.command, l.env = cmd, p.env()
	case opts.Prompt != "":
		return nil, errors.New("--prompt goes into an agent preset's command: use it with --agent NAME (see git lease agents)")
	}
	if !sandboxed {
		if len(opts.Net) > 0 || len(opts.Credentials) > 0 {
			return nil, errors.New("--net and --credential apply to sandboxed leases: a trusted_local agent runs with your own network and environment")
		}
		return l, nil
	}
	if err := eff.selectNetwork(opts.Net); err != nil {
		return nil, err
	}
	if err := eff.selectCredentials(opts.Credentials); err != nil {
		return nil, err
	}
	var err error
	if l.allow, err = eff.leaseAllowlist(); err != nil {
		return nil, err
	}
	if l.creds, err = eff.resolveCredentials(); err != nil {
		return nil, err
	}
	return l, nil
}

// records are the lease's credentials as its record keeps them.
func (l *launch) records() []CredentialRecord {
	var out []CredentialRecord
	for _, c := range l.creds {
		out = append(out, c.CredentialRecord)
	}
	return out
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
	var err error
	if a.net, err = x.startNetwork(l.allow); err != nil {
		return nil, err
	}
	if a.net != nil {
		spec.ProxySocket = a.net.socket
	}
	env, files, err := x.deliverCredentials(l.creds)
	if err != nil {
		a.close(nil)
		return nil, fmt.Errorf("credentials: %w", err)
	}
	spec.Files = files
	cmd.Env = append(cmd.Env, env...)
	return a, nil
}

// close stops the proxy and removes the credential files, then returns
// the lease's network record, the log files of its evidence and all its
// findings (those recorded before, then the network's). proc, when not
// nil, is the agent's ended sandbox, whose network stack's refusals count
// too. Only the first call does anything.
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
	rec, files, found := networkEvidence(a.net, bypass, a.redact)
	findings := append(slices.Clone(a.x.Lease.Findings), found...)
	if len(found) > 0 {
		b, _ := json.MarshalIndent(findings, "", "  ")
		files[findingsFile] = append(b, '\n')
	}
	return rec, files, findings
}
