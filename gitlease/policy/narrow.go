package policy

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
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
	for _, k := range keys {
		rule, ok := narrowing[k]
		if !ok {
			return fmt.Errorf("%w: %s sets %s, which no narrowing rule covers", ErrWiden, source, k)
		}
		if why := rule(&req, &eff.Policy); why != "" {
			return fmt.Errorf("%w: %s %s", ErrWiden, source, strings.ReplaceAll(why, "{key}", k))
		}
		eff.Sources[k] = source
	}
	eff.Policy = req
	return nil
}

// A narrowing rule checks (or merges) one key of a request against the
// trusted policy. It returns why the request widens it ("" when it does
// not), following the source's name, with {key} for the key.
type narrowRule func(req, trusted *Policy) string

func wider(asked, allowed any) string {
	return fmt.Sprintf("asks for {key} = %v, but the trusted policy allows %v", asked, allowed)
}

func trustedOnly(why string) narrowRule {
	return func(*Policy, *Policy) string {
		return "sets {key}, which only trusted policy may set: " + why
	}
}

func equalOnly[T comparable](field func(*Policy) T) narrowRule {
	return func(req, trusted *Policy) string {
		if field(req) != field(trusted) {
			return wider(field(req), field(trusted))
		}
		return ""
	}
}

// atMostRule refuses a limit above the trusted one, or an unbounded (zero)
// limit where the trusted one is bounded.
func atMostRule[T ~int | ~int64](field func(*Policy) T) narrowRule {
	return func(req, trusted *Policy) string {
		if asked, allowed := field(req), field(trusted); allowed > 0 && (asked == 0 || asked > allowed) {
			return wider(asked, allowed)
		}
		return ""
	}
}

func subsetRule(field func(*Policy) []string) narrowRule {
	return func(req, trusted *Policy) string {
		for _, a := range field(req) {
			if !slices.Contains(field(trusted), a) {
				return wider(fmt.Sprintf("[%q]", a), fmt.Sprintf("%q", field(trusted)))
			}
		}
		return ""
	}
}

func unionRule(field func(*Policy) *[]string) narrowRule {
	return func(req, trusted *Policy) string {
		*field(req) = union(*field(trusted), *field(req))
		return ""
	}
}

const sharedBases = "exported bases are shared by every lease of the repository"

const namesYourMachine = "agent presets and credential files name programs and files of your machine"

// narrowing is the rule of every policy key (policyKeys and
// trustedOnlyKeys); TestEveryPolicyKeyHasANarrowingRule walks Policy's TOML
// keys, so that a new key without a rule fails the tests, and narrow
// refuses a key it has no rule for.
var narrowing = map[string]narrowRule{
	"provider":         equalOnly(func(p *Policy) sandbox.ProviderName { return p.Provider }),
	"limits.wall":      atMostRule(func(p *Policy) Duration { return p.Limits.Wall }),
	"limits.cpu":       atMostRule(func(p *Policy) Duration { return p.Limits.CPU }),
	"limits.memory":    atMostRule(func(p *Policy) Size { return p.Limits.Memory }),
	"limits.processes": atMostRule(func(p *Policy) int { return p.Limits.Processes }),
	"limits.disk":      atMostRule(func(p *Policy) Size { return p.Limits.Disk }),
	"limits.output":    atMostRule(func(p *Policy) Size { return p.Limits.Output }),
	"limits.require_cgroup": func(req, trusted *Policy) string {
		if !req.Limits.RequireCgroup && trusted.Limits.RequireCgroup {
			return wider(false, true)
		}
		return ""
	},
	"read_only": subsetRule(func(p *Policy) []string { return p.ReadOnly }),
	"network.allow": func(req, trusted *Policy) string {
		a, err := uncovered(req.Network.Allow, trusted.Network.Allow)
		if err != nil {
			return "asks for {key}: " + err.Error()
		}
		if a != "" {
			return wider(fmt.Sprintf("[%q]", a), fmt.Sprintf("%q", trusted.Network.Allow))
		}
		return ""
	},
	"credentials":             subsetRule(func(p *Policy) []string { return p.Credentials }),
	"result.max_files":        atMostRule(func(p *Policy) int { return p.Result.MaxFiles }),
	"result.max_bytes":        atMostRule(func(p *Policy) Size { return p.Result.MaxBytes }),
	"result.max_binary_files": atMostRule(func(p *Policy) int { return p.Result.MaxBinaryFiles }),
	"result.symlinks": func(req, trusted *Policy) string {
		if req.Result.Symlinks != trusted.Result.Symlinks && req.Result.Symlinks != "none" {
			return wider(req.Result.Symlinks, trusted.Result.Symlinks)
		}
		return ""
	},
	"result.submodules": func(req, trusted *Policy) string {
		if req.Result.Submodules && !trusted.Result.Submodules {
			return wider(true, false)
		}
		return ""
	},
	"result.accept_at_apply": subsetRule(func(p *Policy) []string { return p.Result.AcceptAtApply }),
	"result.protected":       unionRule(func(p *Policy) *[]string { return &p.Result.Protected }),
	"checks":                 unionRule(func(p *Policy) *[]string { return &p.Checks }),
	"bwrap.seccomp_allow":    subsetRule(func(p *Policy) []string { return p.Bwrap.SeccompAllow }),
	"bwrap.tolerate_escapes": subsetRule(func(p *Policy) []string { return p.Bwrap.TolerateEscapes }),
	"bwrap.require_recording": func(req, trusted *Policy) string {
		if !req.Bwrap.RequireRecording && trusted.Bwrap.RequireRecording {
			return wider(false, true)
		}
		return ""
	},
	"bwrap.record_opens": func(req, trusted *Policy) string {
		if !req.Bwrap.RecordOpens && trusted.Bwrap.RecordOpens {
			return wider(false, true)
		}
		return ""
	},
	"crabbox.pass_env":       trustedOnly("it lets variables of your environment steer crabbox"),
	"bases.max_age":          trustedOnly(sharedBases),
	"bases.max_bytes":        trustedOnly(sharedBases),
	"gate":                   trustedOnly("the feasibility gate is this machine's, not a repository's"),
	"revoke.reason":          trustedOnly("a revocation of every repository is the user's decision, not a commit's"),
	"agents":                 trustedOnly(namesYourMachine),
	"caches":                 trustedOnly("caches are shared by every lease of the repository, and only a trusted warm-up fills them"),
	"cache_layers.max_age":   trustedOnly("cache layers are shared by every lease of the repository"),
	"cache_layers.max_bytes": trustedOnly("cache layers are shared by every lease of the repository"),
	"credential_files":       trustedOnly(namesYourMachine),
	"crabbox.provider":       equalOnly(func(p *Policy) string { return p.Crabbox.Provider }),
	"crabbox.sandboxed":      subsetRule(func(p *Policy) []string { return p.Crabbox.Sandboxed }),
	"crabbox.bin":            equalOnly(func(p *Policy) string { return p.Crabbox.Bin }),
	"crabbox.ttl":            atMostRule(func(p *Policy) Duration { return p.Crabbox.TTL }),
	"crabbox.idle_timeout":   atMostRule(func(p *Policy) Duration { return p.Crabbox.IdleTimeout }),
	"crabbox.max_copy_bytes": atMostRule(func(p *Policy) Size { return p.Crabbox.MaxCopyBytes }),
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
