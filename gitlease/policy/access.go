package policy

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/git-lease/git-lease/sandbox/netproxy"
)

var (
	// envName is a credential's or a preset variable's name.
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// agentName is a preset's name, and a Herdr agent kind (Herdr's own
	// rule for agent IDs), compiled on first use: its counted repetition
	// compiles into a program of one node per count, milliseconds that
	// every start of the binary (the sandbox's init included) would pay.
	agentName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`) })
)

// validateAccess checks the settings that reach outside the sandbox:
// destinations, credential names and files, and agent presets.
func (e *Effective) validateAccess() error {
	if _, err := parseAllowlist(e.Network.Allow); err != nil {
		return fmt.Errorf("network.allow (%s): %w", e.Sources["network.allow"], err)
	}
	for _, c := range e.Credentials {
		if !envName.MatchString(c) {
			return fmt.Errorf("credentials = [%q] (%s): a credential is named like an environment variable (letters, digits, _)", c, e.Sources["credentials"])
		}
	}
	for name, path := range e.CredentialFiles {
		if !envName.MatchString(name) {
			return fmt.Errorf("credential_files.%s (trusted policy): a credential is named like an environment variable (letters, digits, _)", name)
		}
		if !filepath.IsAbs(ExpandHome(path)) {
			return fmt.Errorf("credential_files.%s = %q (trusted policy): use an absolute path or ~/…", name, path)
		}
	}
	for _, p := range Presets(e.Policy) {
		if err := p.validate(); err != nil {
			return fmt.Errorf("agent preset %s (%s): %w", p.Name, p.Source, err)
		}
	}
	return nil
}

// validate checks a preset's own settings.
func (p NamedPreset) validate() error {
	switch {
	case !agentName().MatchString(p.Name):
		return errors.New("name it with lowercase letters, digits and '-', starting with a letter")
	case len(p.Command) == 0 || p.Command[0] == "":
		return errors.New(`command is empty: give the argv that starts the agent, as in command = ["claude", "-p", "{prompt}"]`)
	case p.HerdrAgent != "" && !agentName().MatchString(p.HerdrAgent):
		return fmt.Errorf("herdr_agent = %q: Herdr names agents with lowercase letters, digits and '-'", p.HerdrAgent)
	}
	for _, ro := range p.ReadOnly {
		if !filepath.IsAbs(ro) || filepath.Clean(ro) != ro {
			return fmt.Errorf("read_only = [%q]: use clean absolute paths", ro)
		}
	}
	if _, err := parseAllowlist(p.Network); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	for _, c := range p.Credentials {
		if !envName.MatchString(c) {
			return fmt.Errorf("credentials = [%q]: a credential is named like an environment variable", c)
		}
	}
	for k := range p.Env {
		if !envName.MatchString(k) {
			return fmt.Errorf("env.%s: not an environment variable name", k)
		}
	}
	if p.BaseURL != "" {
		if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("base_url = %q: give the model server's address, as http://host:port", p.BaseURL)
		}
	}
	for _, rel := range p.HomePaths() {
		if !inHome(rel) {
			return fmt.Errorf("home_files: %q is not a path inside the home (relative, clean, without ..)", rel)
		}
	}
	return nil
}

// parseAllowlist parses destinations as netproxy reads them.
func parseAllowlist(dests []string) (netproxy.Allowlist, error) {
	out := make(netproxy.Allowlist, 0, len(dests))
	for _, s := range dests {
		d, err := netproxy.ParseDest(s)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// uncovered returns the first of asked that the trusted allowlist does not
// cover (netproxy's rules: a wildcard covers names under its domain on its
// port, never the domain itself; an IP address only itself), or "".
func uncovered(asked, trusted []string) (string, error) {
	t, err := parseAllowlist(trusted)
	if err != nil {
		return "", err
	}
	for _, a := range asked {
		r, err := parseAllowlist([]string{a})
		if err != nil {
			return "", err
		}
		if _, err := t.Narrow(r); err != nil {
			return a, nil
		}
	}
	return "", nil
}

// LeaseAllowlist is the allowlist the lease's proxy enforces: the lease's
// destinations as the trusted allowlist admits them, so that a name
// admitted only through a wildcard may not resolve to a private address
// even when a .lease.toml or --net lists it by name.
func (e *Effective) LeaseAllowlist() (netproxy.Allowlist, error) {
	t, err := parseAllowlist(e.trustedAllow)
	if err != nil {
		return nil, err
	}
	r, err := parseAllowlist(e.Network.Allow)
	if err != nil {
		return nil, err
	}
	return t.Narrow(r)
}

// SelectNetwork narrows the lease's allowlist to the destinations asked
// for with --net, each of which the policy must allow.
func (e *Effective) SelectNetwork(asked []string) error {
	if len(asked) == 0 {
		return nil
	}
	a, err := uncovered(asked, e.Network.Allow)
	if err != nil {
		return fmt.Errorf("--net: %w", err)
	}
	if a != "" {
		return fmt.Errorf("--net %s: not in the lease's network allowlist %q (%s): add it to [network] allow in your trusted policy", a, e.Network.Allow, e.Sources["network.allow"])
	}
	e.Network.Allow = union(nil, asked)
	e.Sources["network.allow"] = "--net"
	return nil
}
