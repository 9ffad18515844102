package gitlease

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// A repository's .lease.toml, read from the base commit, may only narrow
// the trusted policy: lower limits, fewer destinations, credentials and
// seccomp entries let through, more protected paths and checks.

// ErrWiden is returned when a repository's .lease.toml asks for more than
// the trusted policy allows.
var ErrWiden = errors.New(".lease.toml may only narrow the trusted policy")

// narrow applies a repository's request, refusing any widening with the
// key and both values.
func narrow(eff *Effective, b []byte, source string) error {
	req := eff.Policy.clone()
	keys, err := decodePolicy(b, &req)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	trusted := eff.Policy
	wider := func(key string, asked, allowed any) error {
		return fmt.Errorf("%w: %s asks for %s = %v, but the trusted policy allows %v", ErrWiden, source, key, asked, allowed)
	}
	for _, k := range keys {
		var err error
		switch k {
		case "provider":
			if req.Provider != trusted.Provider {
				err = wider(k, req.Provider, trusted.Provider)
			}
		case "limits.wall":
			err = atMost(k, req.Limits.Wall, trusted.Limits.Wall, wider)
		case "limits.cpu":
			err = atMost(k, req.Limits.CPU, trusted.Limits.CPU, wider)
		case "limits.memory":
			err = atMost(k, req.Limits.Memory, trusted.Limits.Memory, wider)
		case "limits.processes":
			err = atMost(k, req.Limits.Processes, trusted.Limits.Processes, wider)
		case "limits.disk":
			err = atMost(k, req.Limits.Disk, trusted.Limits.Disk, wider)
		case "limits.output":
			err = atMost(k, req.Limits.Output, trusted.Limits.Output, wider)
		case "limits.require_cgroup":
			if !req.Limits.RequireCgroup && trusted.Limits.RequireCgroup {
				err = wider(k, false, true)
			}
		case "read_only":
			err = subset(k, req.ReadOnly, trusted.ReadOnly, wider)
		case "network.allow":
			var a string
			if a, err = uncovered(req.Network.Allow, trusted.Network.Allow); err == nil && a != "" {
				err = wider(k, fmt.Sprintf("[%q]", a), fmt.Sprintf("%q", trusted.Network.Allow))
			}
		case "credentials":
			err = subset(k, req.Credentials, trusted.Credentials, wider)
		case "result.max_files":
			err = atMost(k, req.Result.MaxFiles, trusted.Result.MaxFiles, wider)
		case "result.max_bytes":
			err = atMost(k, req.Result.MaxBytes, trusted.Result.MaxBytes, wider)
		case "result.max_binary_files":
			err = atMost(k, req.Result.MaxBinaryFiles, trusted.Result.MaxBinaryFiles, wider)
		case "result.symlinks":
			if req.Result.Symlinks != trusted.Result.Symlinks && req.Result.Symlinks != "none" {
				err = wider(k, req.Result.Symlinks, trusted.Result.Symlinks)
			}
		case "result.submodules":
			if req.Result.Submodules && !trusted.Result.Submodules {
				err = wider(k, true, false)
			}
		case "result.accept_at_apply":
			err = subset(k, req.Result.AcceptAtApply, trusted.Result.AcceptAtApply, wider)
		case "result.protected":
			req.Result.Protected = union(trusted.Result.Protected, req.Result.Protected)
		case "checks":
			req.Checks = union(trusted.Checks, req.Checks)
		case "bwrap.seccomp_allow":
			err = subset(k, req.Bwrap.SeccompAllow, trusted.Bwrap.SeccompAllow, wider)
		case "crabbox.pass_env":
			err = fmt.Errorf("%w: %s sets %s, which only trusted policy may set: it lets variables of your environment steer crabbox", ErrWiden, source, k)
		case "bases.max_age", "bases.max_bytes":
			err = fmt.Errorf("%w: %s sets %s, which only trusted policy may set: exported bases are shared by every lease of the repository", ErrWiden, source, k)
		case "agents", "credential_files":
			err = fmt.Errorf("%w: %s sets %s, which only trusted policy may set: agent presets and credential files name programs and files of your machine", ErrWiden, source, k)
		case "crabbox.provider":
			if req.Crabbox.Provider != trusted.Crabbox.Provider {
				err = wider(k, req.Crabbox.Provider, trusted.Crabbox.Provider)
			}
		case "crabbox.sandboxed":
			err = subset(k, req.Crabbox.Sandboxed, trusted.Crabbox.Sandboxed, wider)
		case "crabbox.bin":
			if req.Crabbox.Bin != trusted.Crabbox.Bin {
				err = wider(k, req.Crabbox.Bin, trusted.Crabbox.Bin)
			}
		case "crabbox.ttl":
			err = atMost(k, req.Crabbox.TTL, trusted.Crabbox.TTL, wider)
		case "crabbox.idle_timeout":
			err = atMost(k, req.Crabbox.IdleTimeout, trusted.Crabbox.IdleTimeout, wider)
		case "crabbox.max_copy_bytes":
			err = atMost(k, req.Crabbox.MaxCopyBytes, trusted.Crabbox.MaxCopyBytes, wider)
		}
		if err != nil {
			return err
		}
		eff.Sources[k] = source
	}
	eff.Policy = req
	return nil
}

// atMost refuses a limit above the trusted one, or an unbounded (zero)
// limit where the trusted one is bounded.
func atMost[T ~int | ~int64](key string, asked, allowed T, wider func(string, any, any) error) error {
	if allowed > 0 && (asked == 0 || asked > allowed) {
		return wider(key, asked, allowed)
	}
	return nil
}

func subset(key string, asked, allowed []string, wider func(string, any, any) error) error {
	for _, a := range asked {
		if !slices.Contains(allowed, a) {
			return wider(key, fmt.Sprintf("[%q]", a), fmt.Sprintf("%q", allowed))
		}
	}
	return nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	sort.Strings(out[len(a):])
	return out
}
