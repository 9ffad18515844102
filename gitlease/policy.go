package gitlease

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
)

// Policy is what a lease may do. Trusted policy comes from the user's own
// configuration; a repository's .lease.toml (read from the base commit) may
// only narrow it.
type Policy struct {
	Provider    string       `toml:"provider" json:"provider"`
	Limits      Limits       `toml:"limits" json:"limits"`
	ReadOnly    []string     `toml:"read_only" json:"read_only"`
	Network     Network      `toml:"network" json:"network"`
	Credentials []string     `toml:"credentials" json:"credentials"`
	Result      ResultPolicy `toml:"result" json:"result"`
	Checks      []string     `toml:"checks" json:"checks"`
	// Agents (presets, [agents.NAME]) and CredentialFiles (credential name
	// -> host file) may be set in trusted policy only: they name programs
	// and files of the user's machine, so no record holds them.
	Agents          map[string]AgentPreset `toml:"agents" json:"-"`
	CredentialFiles map[string]string      `toml:"credential_files" json:"-"`

	// Crabbox applies when Provider is "crabbox".
	Crabbox CrabboxPolicy `toml:"crabbox" json:"crabbox"`
}

// Limits bound one agent run.
type Limits struct {
	Wall      Duration `toml:"wall" json:"wall"`
	CPU       Duration `toml:"cpu" json:"cpu"`
	Memory    Size     `toml:"memory" json:"memory"`
	Processes int      `toml:"processes" json:"processes"`
	Disk      Size     `toml:"disk" json:"disk"`
	Output    Size     `toml:"output" json:"output"`
}

// Network lists the destinations (host:port, *.domain:port) a lease may reach.
type Network struct {
	Allow []string `toml:"allow" json:"allow"`
}

// ResultPolicy bounds what a result may contain.
type ResultPolicy struct {
	MaxFiles       int      `toml:"max_files" json:"max_files"`
	MaxBytes       Size     `toml:"max_bytes" json:"max_bytes"`
	MaxBinaryFiles int      `toml:"max_binary_files" json:"max_binary_files"`
	Symlinks       string   `toml:"symlinks" json:"symlinks"` // "inside" (links that stay in the tree) or "none"
	Submodules     bool     `toml:"submodules" json:"submodules"`
	Protected      []string `toml:"protected" json:"protected"`
}

// DefaultPolicy is safe with no configuration at all: no network, no
// credentials, bounded resources.
func DefaultPolicy() Policy {
	return Policy{
		Provider: "bwrap", ReadOnly: []string{}, Network: Network{Allow: []string{}}, Credentials: []string{}, Checks: []string{},
		Limits: Limits{
			Wall: Duration(30 * time.Minute), CPU: Duration(30 * time.Minute), Memory: 4 << 30,
			Processes: 256, Disk: 2 << 30, Output: 8 << 20,
		},
		Result: ResultPolicy{
			MaxFiles: 10000, MaxBytes: 100 << 20, MaxBinaryFiles: 100, Symlinks: "inside",
			Protected: []string{".github/", ".gitlab-ci.yml", ".gitattributes", ".gitmodules", ".envrc",
				".vscode/", ".idea/", ".claude/", ".mcp.json", ".lease.toml"},
		},
		Crabbox: defaultCrabbox(),
	}
}

// Effective is the policy in force for one lease and where each setting came from.
type Effective struct {
	Policy
	// Sources maps each setting ("limits.memory") to SourceDefault,
	// SourceTrusted or ".lease.toml at <commit>". (Never a local path: the
	// record is pushed.)
	Sources map[string]string `json:"sources"`
	// trustedAllow is the trusted allowlist (with the agent preset's
	// destinations) before any narrowing: a lease's proxy is built from it,
	// so that a name admitted only through a wildcard keeps the wildcard's
	// limits (see netproxy.Allowlist.Narrow).
	trustedAllow []string
	// agent is the preset the policy was loaded for, if any.
	agent *namedPreset
}

// Where a setting came from.
const (
	SourceDefault = "default"
	SourceTrusted = "trusted policy"
)

// Digest identifies the effective policy in signed records.
func (e *Effective) Digest() string {
	b, _ := json.Marshal(e.Policy)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ErrWiden is returned when a repository's .lease.toml asks for more than
// the trusted policy allows.
var ErrWiden = errors.New(".lease.toml may only narrow the trusted policy")

// repoPolicyFile is the repository's request, read from the base commit.
const repoPolicyFile = ".lease.toml"

// TrustedPolicyPath is the user's policy file: the file named by git config
// lease.policy, else $XDG_CONFIG_HOME/git-lease/policy.toml. A file inside
// the repository is refused: a commit must not choose its own policy.
func TrustedPolicyPath(repo *refs.Repo) (string, error) {
	path := repo.Config("lease.policy")
	if path == "" {
		return filepath.Join(configHome(), "git-lease", "policy.toml"), nil
	}
	if strings.HasPrefix(path, "~/") {
		home, _ := os.UserHomeDir()
		path = filepath.Join(home, path[2:])
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	for _, inside := range []string{repo.WorkTree, repo.CommonDir} {
		if inside != "" && (abs == inside || strings.HasPrefix(abs, inside+string(filepath.Separator))) {
			return "", fmt.Errorf("lease.policy = %s is inside the repository; trusted policy must live outside it (e.g. ~/.config/git-lease/policy.toml)", path)
		}
	}
	return abs, nil
}

func configHome() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return x
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config")
}

// LoadPolicy computes the effective policy for a lease on base: defaults,
// then the trusted file (which may set anything), then the repository's
// .lease.toml from base (which may only narrow). A zero base skips the
// .lease.toml.
func LoadPolicy(repo *refs.Repo, base plumbing.Hash) (*Effective, error) {
	return loadPolicy(repo, base, "")
}

// loadPolicy is LoadPolicy for a lease that runs agent preset agent (when
// not empty): the preset's read-only paths, destinations and credentials
// join the trusted policy before the .lease.toml narrows it.
func loadPolicy(repo *refs.Repo, base plumbing.Hash, agent string) (*Effective, error) {
	eff := &Effective{Policy: DefaultPolicy(), Sources: map[string]string{}}
	path, err := TrustedPolicyPath(repo)
	if err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(path); err == nil {
		keys, err := decodePolicy(b, &eff.Policy)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, k := range keys {
			eff.Sources[k] = SourceTrusted
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := eff.addAgent(agent); err != nil {
		return nil, err
	}
	eff.trustedAllow = slices.Clone(eff.Network.Allow)
	if !base.IsZero() {
		b, err := repo.ReadFile(base, repoPolicyFile, 1<<20)
		if err == nil {
			if err := narrow(eff, b, fmt.Sprintf(".lease.toml at %s", base.String()[:12])); err != nil {
				return nil, err
			}
		} else if !errors.Is(err, refs.ErrNoFile) {
			return nil, err
		}
	}
	for _, k := range policyKeys {
		if eff.Sources[k] == "" {
			eff.Sources[k] = SourceDefault
		}
	}
	return eff, eff.validate()
}

// PolicyKeys are every setting, in the order git lease policy prints them.
func PolicyKeys() []string { return slices.Clone(policyKeys) }

// policyKeys are every setting, in the order git lease policy prints them.
var policyKeys = []string{
	"provider", "limits.wall", "limits.cpu", "limits.memory", "limits.processes", "limits.disk", "limits.output",
	"read_only", "network.allow", "credentials", "result.max_files", "result.max_bytes",
	"result.max_binary_files", "result.symlinks", "result.submodules", "result.protected", "checks",
	"crabbox.provider", "crabbox.sandboxed", "crabbox.bin", "crabbox.ttl", "crabbox.idle_timeout", "crabbox.max_copy_bytes",
}

// decodePolicy decodes TOML into p, refusing unknown keys, and returns the
// keys it set.
func decodePolicy(b []byte, p *Policy) ([]string, error) {
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(p)
	if err != nil {
		return nil, err
	}
	if un := md.Undecoded(); len(un) > 0 {
		return nil, fmt.Errorf("unknown setting %q (known: %s)", un[0].String(), strings.Join(policyKeys, ", "))
	}
	var keys []string
	for _, k := range append(slices.Clone(policyKeys), trustedOnlyKeys...) {
		if md.IsDefined(strings.Split(k, ".")...) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// trustedOnlyKeys are the settings a .lease.toml may not touch at all.
var trustedOnlyKeys = []string{"agents", "credential_files"}

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
		case "result.protected":
			req.Result.Protected = union(trusted.Result.Protected, req.Result.Protected)
		case "checks":
			req.Checks = union(trusted.Checks, req.Checks)
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

// clone copies p with its own slices, so decoding into the copy cannot
// write into p.
func (p Policy) clone() Policy {
	p.ReadOnly = slices.Clone(p.ReadOnly)
	p.Network.Allow = slices.Clone(p.Network.Allow)
	p.Credentials = slices.Clone(p.Credentials)
	p.Result.Protected = slices.Clone(p.Result.Protected)
	p.Checks = slices.Clone(p.Checks)
	p.Agents = maps.Clone(p.Agents)
	p.CredentialFiles = maps.Clone(p.CredentialFiles)
	p.Crabbox.Sandboxed = slices.Clone(p.Crabbox.Sandboxed)
	return p
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

// validate checks settings that are wrong in themselves, wherever they came from.
func (e *Effective) validate() error {
	switch e.Result.Symlinks {
	case "inside", "none":
	default:
		return fmt.Errorf("result.symlinks = %q (%s): use \"inside\" or \"none\"", e.Result.Symlinks, e.Sources["result.symlinks"])
	}
	for _, p := range e.ReadOnly {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return fmt.Errorf("read_only = %q (%s): use clean absolute paths", p, e.Sources["read_only"])
		}
	}
	if err := e.validateAccess(); err != nil {
		return err
	}
	return e.validateCrabbox()
}
