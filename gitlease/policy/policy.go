package policy

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
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/bwrap"
	"github.com/git-lease/git-lease/verify"
)

// Policy is what a lease may do. Trusted policy comes from the user's own
// configuration; a repository's .lease.toml (read from the base commit) may
// only narrow it.
type Policy struct {
	Provider    sandbox.ProviderName `toml:"provider" json:"provider"`
	Limits      Limits               `toml:"limits" json:"limits"`
	ReadOnly    []string             `toml:"read_only" json:"read_only"`
	Network     Network              `toml:"network" json:"network"`
	Credentials []string             `toml:"credentials" json:"credentials"`
	Result      ResultPolicy         `toml:"result" json:"result"`
	Checks      []string             `toml:"checks" json:"checks"`
	// Agents (presets, [agents.NAME]) and CredentialFiles (credential name
	// -> host file) may be set in trusted policy only: they name programs
	// and files of the user's machine, so no record holds them.
	Agents          map[string]AgentPreset `toml:"agents" json:"-"`
	CredentialFiles map[string]string      `toml:"credential_files" json:"-"`

	// Bases bounds the exported bases that bwrap keeps for later leases;
	// trusted policy only, and no record holds it (it is no lease's).
	Bases BasesPolicy `toml:"bases" json:"-"`

	// Gate says what a sandboxed start does when no passing feasibility
	// gate matches its setup: "run" it first (the default) or "require"
	// one, refusing with the command to run. Trusted policy only, and no
	// record holds it (it is the machine's, not a lease's).
	Gate string `toml:"gate" json:"-"`

	// Revoke, when its reason is set, refuses every new lease of every
	// repository of this user (a revocation of them all); trusted policy
	// only, and no record holds it.
	Revoke RevokePolicy `toml:"revoke" json:"-"`

	// Caches are the build and package caches every bwrap lease gets
	// ([caches.NAME]); trusted policy only. The record holds them: they
	// are part of what the agent saw.
	Caches map[string]CachePolicy `toml:"caches" json:"caches,omitempty"`
	// CacheLayers bounds the cache layers as Bases bounds the bases.
	CacheLayers BasesPolicy `toml:"cache_layers" json:"-"`

	// Bwrap applies when Provider is "bwrap" or "agentfs" (bwrap's sandbox).
	Bwrap BwrapPolicy `toml:"bwrap" json:"bwrap"`
	// Crabbox applies when Provider is "crabbox".
	Crabbox CrabboxPolicy `toml:"crabbox" json:"crabbox"`
}

// BasesPolicy is the [bases] table: git lease gc evicts the exported bases
// (and layers) that no lease uses when unused for longer than MaxAge, and
// then, oldest first, while they take more than MaxBytes (0: no cap).
type BasesPolicy struct {
	MaxAge   Duration `toml:"max_age"`
	MaxBytes Size     `toml:"max_bytes"`
}

// RevokePolicy is the [revoke] table: Reason is what a refused start says.
type RevokePolicy struct {
	Reason string `toml:"reason"`
}

// CachePolicy is one [caches.NAME] table. Each of Paths is "VAR:/cache/dir":
// a directory of the cache under bwrap.CacheRoot, and the environment
// variable that names it to the toolchain (GOCACHE, npm_config_cache, …).
// Warm is the shell command that git lease cache warm runs in a sandbox
// on the base to fill them.
type CachePolicy struct {
	Paths []string `toml:"paths" json:"paths"`
	Warm  string   `toml:"warm" json:"warm"`
}

// BwrapPolicy is the [bwrap] table: SeccompAllow names the entries of the
// sandbox's seccomp filter that a lease lets through (for example "perf"
// to profile); none by default. A .lease.toml may only name fewer.
// TolerateEscapes names entries whose refused calls are recorded as
// findings without quarantining the result (critical ones do otherwise);
// a .lease.toml may only name fewer. RequireRecording refuses a
// start where the sandbox could not record escape attempts; a .lease.toml
// may set it, never unset it. RecordOpens records the opens that would
// write outside the agent's places too, at a cost to every open that asks
// to write (see the README); a .lease.toml may set it, never unset it.
type BwrapPolicy struct {
	SeccompAllow     []string `toml:"seccomp_allow" json:"seccomp_allow"`
	TolerateEscapes  []string `toml:"tolerate_escapes" json:"tolerate_escapes"`
	RequireRecording bool     `toml:"require_recording" json:"require_recording"`
	RecordOpens      bool     `toml:"record_opens" json:"record_opens"`
}

// Limits bound one agent run.
type Limits struct {
	Wall      Duration `toml:"wall" json:"wall"`
	CPU       Duration `toml:"cpu" json:"cpu"`
	Memory    Size     `toml:"memory" json:"memory"`
	Processes int      `toml:"processes" json:"processes"`
	Disk      Size     `toml:"disk" json:"disk"`
	Output    Size     `toml:"output" json:"output"`
	// RequireCgroup refuses a sandboxed start where no cgroup would bind
	// the memory, process and CPU bounds, which rlimits bind only per
	// process (see README, "What binds each bound").
	RequireCgroup bool `toml:"require_cgroup" json:"require_cgroup"`
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
	// AcceptAtApply names the rules whose findings send a result to review
	// to be accepted explicitly at apply (git lease apply --accept) instead
	// of quarantining it. Only protected-path may wait: materializing runs
	// no driver the result chose, so reviewing such a result is safe,
	// while applying it changes what runs on the next checkout or CI run.
	AcceptAtApply []string `toml:"accept_at_apply" json:"accept_at_apply"`
}

// acceptableRules are the rules whose findings may wait for acceptance.
var acceptableRules = []string{string(verify.RuleProtectedPath)}

// defaultDisk bounds a lease's disk, and the copy back from a Crabbox box.
const defaultDisk = 2 << 30

// Default is safe with no configuration at all: no network, no
// credentials, bounded resources.
func Default() Policy {
	return Policy{
		Provider: sandbox.Bwrap, ReadOnly: []string{}, Network: Network{Allow: []string{}}, Credentials: []string{}, Checks: []string{},
		Limits: Limits{
			Wall: Duration(30 * time.Minute), CPU: Duration(30 * time.Minute), Memory: 4 << 30,
			Processes: 256, Disk: defaultDisk, Output: 8 << 20,
		},
		Result: ResultPolicy{
			MaxFiles: verify.DefaultMaxFiles, MaxBytes: verify.DefaultMaxBytes, MaxBinaryFiles: verify.DefaultMaxBinaryFiles, Symlinks: "inside",
			Protected: slices.Clone(verify.DefaultProtected), AcceptAtApply: []string{},
		},
		Bases:   BasesPolicy{MaxAge: Duration(7 * 24 * time.Hour), MaxBytes: 20 << 30},
		Gate:    "run",
		Bwrap:   BwrapPolicy{SeccompAllow: []string{}, TolerateEscapes: []string{}},
		Crabbox: defaultCrabbox(),

		// A layer costs a warm-up to make again: kept longer than a base.
		CacheLayers: BasesPolicy{MaxAge: Duration(30 * 24 * time.Hour), MaxBytes: 20 << 30},
	}
}

// VerifyPolicy is the result part of a lease's policy, for the verify package.
func (p *Policy) VerifyPolicy() verify.Policy {
	return verify.Policy{
		MaxFiles: p.Result.MaxFiles, MaxBytes: int64(p.Result.MaxBytes), MaxBinaryFiles: p.Result.MaxBinaryFiles,
		DenySymlinks: p.Result.Symlinks == "none", AllowSubmodules: p.Result.Submodules,
		Protected: append([]string{}, p.Result.Protected...),
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
	agent *NamedPreset
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

// repoPolicyFile is the repository's request, read from the base commit.
const repoPolicyFile = ".lease.toml"

// TrustedPath is the user's policy file: the file named by git config
// lease.policy, else $XDG_CONFIG_HOME/git-lease/policy.toml. A file inside
// the repository is refused: a commit must not choose its own policy.
func TrustedPath(repo *refs.Repo) (string, error) {
	path := repo.Config("lease.policy")
	if path == "" {
		return filepath.Join(ConfigHome(), "git-lease", "policy.toml"), nil
	}
	abs, err := filepath.Abs(ExpandHome(path))
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

// ConfigHome is $XDG_CONFIG_HOME, else ~/.config.
func ConfigHome() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return x
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config")
}

// Load computes the effective policy for a lease on base: defaults,
// then the trusted file (which may set anything), then the repository's
// .lease.toml from base (which may only narrow). A zero base skips the
// .lease.toml.
func Load(repo *refs.Repo, base plumbing.Hash) (*Effective, error) {
	return LoadForAgent(repo, base, "")
}

// LoadForAgent is Load for a lease that runs agent preset agent (when
// not empty): the preset's read-only paths, destinations and credentials
// join the trusted policy before the .lease.toml narrows it.
func LoadForAgent(repo *refs.Repo, base plumbing.Hash, agent string) (*Effective, error) {
	eff := &Effective{Policy: Default(), Sources: map[string]string{}}
	path, err := TrustedPath(repo)
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
		if err := eff.protectGitLabIncludes(repo, base); err != nil {
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

// Keys are every setting, in the order git lease policy prints them.
func Keys() []string { return slices.Clone(policyKeys) }

// policyKeys are every setting, in the order git lease policy prints them.
var policyKeys = []string{
	"provider", "limits.wall", "limits.cpu", "limits.memory", "limits.processes", "limits.disk", "limits.output",
	"limits.require_cgroup", "read_only", "network.allow", "credentials", "result.max_files", "result.max_bytes",
	"result.max_binary_files", "result.symlinks", "result.submodules", "result.protected", "result.accept_at_apply", "checks",
	"bwrap.seccomp_allow", "bwrap.tolerate_escapes", "bwrap.require_recording", "bwrap.record_opens", "crabbox.provider", "crabbox.sandboxed", "crabbox.bin", "crabbox.ttl", "crabbox.idle_timeout", "crabbox.max_copy_bytes",
}

// trustedOnlyKeys are the settings a .lease.toml may not touch at all.
var trustedOnlyKeys = []string{"agents", "credential_files", "crabbox.pass_env", "bases.max_age", "bases.max_bytes", "gate", "revoke.reason", "caches", "cache_layers.max_age", "cache_layers.max_bytes"}

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
	// Every key the document set, named as policyKeys name it (a preset's
	// agents.claude.command is agents). A key that decoded into Policy but
	// that no list names comes back as itself, for narrow to refuse.
	known := append(slices.Clone(policyKeys), trustedOnlyKeys...)
	var keys []string
	for _, key := range md.Keys() {
		k := key.String()
		for i := 1; i <= len(key); i++ {
			if prefix := strings.Join(key[:i], "."); slices.Contains(known, prefix) {
				k = prefix
				break
			}
		}
		if !slices.Contains(known, k) && md.Type(key...) == "Hash" {
			continue // a table ([limits]); its keys come on their own
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// clone copies p with its own slices, so decoding into the copy cannot
// write into p.
func (p Policy) clone() Policy {
	p.ReadOnly = slices.Clone(p.ReadOnly)
	p.Network.Allow = slices.Clone(p.Network.Allow)
	p.Credentials = slices.Clone(p.Credentials)
	p.Result.Protected = slices.Clone(p.Result.Protected)
	p.Result.AcceptAtApply = slices.Clone(p.Result.AcceptAtApply)
	p.Checks = slices.Clone(p.Checks)
	p.Agents = maps.Clone(p.Agents)
	p.Caches = maps.Clone(p.Caches)
	p.CredentialFiles = maps.Clone(p.CredentialFiles)
	p.Bwrap.SeccompAllow = slices.Clone(p.Bwrap.SeccompAllow)
	p.Bwrap.TolerateEscapes = slices.Clone(p.Bwrap.TolerateEscapes)
	p.Crabbox.Sandboxed = slices.Clone(p.Crabbox.Sandboxed)
	p.Crabbox.PassEnv = slices.Clone(p.Crabbox.PassEnv)
	return p
}

// validate checks settings that are wrong in themselves, wherever they came from.
func (e *Effective) validate() error {
	if e.Gate != "run" && e.Gate != "require" {
		return fmt.Errorf("gate = %q (%s): use \"run\" or \"require\"", e.Gate, e.Sources["gate"])
	}
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
	for _, r := range e.Result.AcceptAtApply {
		if !slices.Contains(acceptableRules, r) {
			return fmt.Errorf("result.accept_at_apply = %q (%s): only %s findings may wait for acceptance at apply", r, e.Sources["result.accept_at_apply"], strings.Join(acceptableRules, ", "))
		}
	}
	if err := bwrap.CheckSeccompAllow(e.Bwrap.SeccompAllow); err != nil {
		return fmt.Errorf("bwrap.seccomp_allow (%s): %w", e.Sources["bwrap.seccomp_allow"], err)
	}
	if err := bwrap.CheckSeccompAllow(e.Bwrap.TolerateEscapes); err != nil {
		return fmt.Errorf("bwrap.tolerate_escapes (%s): %w", e.Sources["bwrap.tolerate_escapes"], err)
	}
	if err := e.validateAccess(); err != nil {
		return err
	}
	if err := e.validateCaches(); err != nil {
		return err
	}
	return e.validateCrabbox()
}

// protectGitLabIncludes adds to the protected paths the files that the
// base's .gitlab-ci.yml includes, when trusted policy protects
// .gitlab-ci.yml: GitLab runs them as CI configuration too.
func (e *Effective) protectGitLabIncludes(repo *refs.Repo, base plumbing.Hash) error {
	if !slices.Contains(e.Result.Protected, "**/.gitlab-ci.yml") && !slices.Contains(e.Result.Protected, ".gitlab-ci.yml") {
		return nil
	}
	b, err := repo.ReadFile(base, ".gitlab-ci.yml", 1<<20)
	if errors.Is(err, refs.ErrNoFile) {
		return nil
	}
	if err != nil {
		return err
	}
	if inc := verify.GitLabIncludes(b); len(inc) > 0 {
		e.Result.Protected = union(e.Result.Protected, inc)
		src := e.Sources["result.protected"]
		if src == "" {
			src = SourceDefault
		}
		e.Sources["result.protected"] = src + fmt.Sprintf(" + what .gitlab-ci.yml at %s includes", base.String()[:12])
	}
	return nil
}
