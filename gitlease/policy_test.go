package gitlease

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// policyRepo makes a repository whose base commit carries leaseToml (if
// any) and a trusted policy file with trusted (if any).
func policyRepo(t *testing.T, trusted, leaseToml string) (*refs.Repo, *Effective, error) {
	t.Helper()
	files := map[string]string{"a": "a"}
	if leaseToml != "" {
		files[".lease.toml"] = leaseToml
	}
	dir := refstest.Repo(t, files)
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if trusted != "" {
		must(t, os.MkdirAll(filepath.Join(cfg, "git-lease"), 0o755))
		must(t, os.WriteFile(filepath.Join(cfg, "git-lease", "policy.toml"), []byte(trusted), 0o644))
	}
	repo, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := repo.ResolveCommit("HEAD")
	eff, err := LoadPolicy(repo, head)
	return repo, eff, err
}

func TestPolicyDefaultsAreSafe(t *testing.T) {
	_, eff, err := policyRepo(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(eff.Network.Allow) != 0 || len(eff.Credentials) != 0 || eff.Limits.Memory != 4<<30 || eff.Limits.Processes != 256 ||
		eff.Limits.Disk != 2<<30 || eff.Limits.Output != 8<<20 || eff.Sources["limits.memory"] != SourceDefault {
		t.Fatalf("defaults: %+v", eff)
	}
}

func TestPolicyTrustedMayWidenAndRepoMayNarrow(t *testing.T) {
	trusted := "[limits]\nmemory = \"8GiB\"\n[network]\nallow = [\"api.example.com:443\", \"*.example.org:443\"]\n"
	repo := "checks = [\"make test\"]\n[limits]\nmemory = \"1GiB\"\nprocesses = 10\n[network]\nallow = [\"a.example.org:443\"]\n[result]\nprotected = [\"secrets/\"]\n"
	_, eff, err := policyRepo(t, trusted, repo)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Limits.Memory != 1<<30 || eff.Limits.Processes != 10 || !slices.Equal(eff.Network.Allow, []string{"a.example.org:443"}) {
		t.Fatalf("narrowed policy: %+v", eff.Policy)
	}
	if !slices.Contains(eff.Result.Protected, "**/.github/") || !slices.Contains(eff.Result.Protected, "secrets/") {
		t.Fatalf("protected paths must be the union: %q", eff.Result.Protected)
	}
	if !strings.HasPrefix(eff.Sources["limits.memory"], ".lease.toml at ") || eff.Sources["limits.wall"] != SourceDefault {
		t.Fatalf("sources: %v", eff.Sources)
	}
}

func TestPolicyRepoMayNotWiden(t *testing.T) {
	trusted := "credentials = [\"API_KEY\"]\n[network]\nallow = [\"*.example.org:443\"]\n"
	cases := []struct{ name, toml, want string }{
		{"more memory", "[limits]\nmemory = \"5GiB\"", "limits.memory = 5GiB, but the trusted policy allows 4GiB"},
		{"unbounded wall time", "[limits]\nwall = \"0s\"", "limits.wall = 0s"},
		{"more processes", "[limits]\nprocesses = 1000", "limits.processes = 1000"},
		{"another destination", "[network]\nallow = [\"evil.com:443\"]", `network.allow = ["evil.com:443"]`},
		{"the wildcard's own domain", "[network]\nallow = [\"example.org:443\"]", "network.allow"},
		{"another port", "[network]\nallow = [\"a.example.org:80\"]", "network.allow"},
		{"a credential", "credentials = [\"OTHER\"]", "credentials"},
		{"a read-only path", "read_only = [\"/srv\"]", "read_only"},
		{"submodules", "[result]\nsubmodules = true", "result.submodules"},
		{"another provider", "provider = \"worktree\"", "provider"},
		// agentfs is no narrower than bwrap: its agent also talks to a
		// file system server on the host. Only trusted policy picks it.
		{"agentfs", "provider = \"agentfs\"", "provider = agentfs, but the trusted policy allows bwrap"},
		{"more files", "[result]\nmax_files = 20000", "result.max_files"},
		{"a seccomp entry", "[bwrap]\nseccomp_allow = [\"perf\"]", `bwrap.seccomp_allow = ["perf"], but the trusted policy allows []`},
		{"bounds without a cgroup", "[limits]\nrequire_cgroup = false", "limits.require_cgroup = false, but the trusted policy allows true"},
		{"a finding to accept", "[result]\naccept_at_apply = [\"protected-path\"]", "result.accept_at_apply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := policyRepo(t, trusted+"[limits]\nrequire_cgroup = true\n", tc.toml)
			if !errors.Is(err, ErrWiden) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrWiden mentioning %q", err, tc.want)
			}
		})
	}
}

func TestPolicyRefusesUnknownKeysAndBadValues(t *testing.T) {
	for _, toml := range []string{"[limit]\nmemory = \"1GiB\"", "[limits]\nmemory = \"lots\"", "[result]\nsymlinks = \"anywhere\""} {
		if _, _, err := policyRepo(t, "", toml); err == nil {
			t.Errorf("%q was accepted", toml)
		}
	}
	// Only protected paths may wait for acceptance, even in trusted policy.
	if _, _, err := policyRepo(t, "[result]\naccept_at_apply = [\"credential\"]", ""); err == nil || !strings.Contains(err.Error(), "only protected-path") {
		t.Errorf("accept_at_apply = [\"credential\"]: %v", err)
	}
}

func TestPolicyFileInsideRepositoryIsRefused(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"policy.toml": "[limits]\nmemory = \"64GiB\"\n"})
	refstest.Git(t, dir, "config", "lease.policy", filepath.Join(dir, "policy.toml"))
	repo, _ := refs.Open(dir)
	head, _ := repo.ResolveCommit("HEAD")
	if _, err := LoadPolicy(repo, head); err == nil || !strings.Contains(err.Error(), "inside the repository") {
		t.Fatalf("got %v", err)
	}
}

// Trusted policy may let entries of the sandbox's seccomp filter through,
// and the lease's sandbox spec carries them to the provider; a .lease.toml
// may only let fewer through.
func TestPolicySeccompAllow(t *testing.T) {
	trusted := "[bwrap]\nseccomp_allow = [\"perf\", \"io_uring\"]\n"
	repo, eff, err := policyRepo(t, trusted, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(eff.Bwrap.SeccompAllow, []string{"perf", "io_uring"}) || eff.Sources["bwrap.seccomp_allow"] != SourceTrusted {
		t.Fatalf("bwrap.seccomp_allow = %q from %s", eff.Bwrap.SeccompAllow, eff.Sources["bwrap.seccomp_allow"])
	}
	head, _ := repo.ResolveCommit("HEAD")
	x := &Execution{Repo: repo, Lease: &Lease{ID: "0123456789ab", Base: head.String(), Policy: eff}}
	if got := x.spec().SeccompAllow; !slices.Equal(got, []string{"perf", "io_uring"}) {
		t.Fatalf("the sandbox spec lets %q through", got)
	}

	_, eff, err = policyRepo(t, trusted, "[bwrap]\nseccomp_allow = [\"perf\"]")
	if err != nil || !slices.Equal(eff.Bwrap.SeccompAllow, []string{"perf"}) || !strings.HasPrefix(eff.Sources["bwrap.seccomp_allow"], ".lease.toml at ") {
		t.Fatalf("narrowed: %v %q", err, eff.Bwrap.SeccompAllow)
	}
	_, _, err = policyRepo(t, trusted, "[bwrap]\nseccomp_allow = [\"perf\", \"keyring\"]")
	if !errors.Is(err, ErrWiden) || !strings.Contains(err.Error(), `bwrap.seccomp_allow = ["keyring"]`) {
		t.Fatalf("widened: %v", err)
	}

	_, eff, err = policyRepo(t, "", "")
	if err != nil || eff.Bwrap.SeccompAllow == nil || len(eff.Bwrap.SeccompAllow) != 0 {
		t.Fatalf("default: %v %#v", err, eff.Bwrap.SeccompAllow)
	}
	_, _, err = policyRepo(t, "[bwrap]\nseccomp_allow = [\"ptrace\"]\n", "")
	if err == nil || !strings.Contains(err.Error(), `bwrap.seccomp_allow (trusted policy): unknown seccomp entry "ptrace" (known: keyring, mount,`) {
		t.Fatalf("unknown entry: %v", err)
	}
}

// tomlKeys lists the dotted TOML keys of t's fields, down to the first
// field that is not a struct (a map is one key: its entries are the user's
// names).
func tomlKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, tomlKeys(f.Type, prefix+name+".")...)
			continue
		}
		keys = append(keys, prefix+name)
	}
	return keys
}

// TestEveryPolicyKeyHasANarrowingRule: a key added to Policy must be named
// in policyKeys (or trustedOnlyKeys) and have a rule in narrowing, or a
// .lease.toml could set it unchecked.
func TestEveryPolicyKeyHasANarrowingRule(t *testing.T) {
	listed := append(slices.Clone(policyKeys), trustedOnlyKeys...)
	for _, k := range tomlKeys(reflect.TypeOf(Policy{}), "") {
		if !slices.Contains(listed, k) {
			t.Errorf("policy key %s is in neither policyKeys nor trustedOnlyKeys", k)
		}
		if narrowing[k] == nil {
			t.Errorf("policy key %s has no narrowing rule", k)
		}
	}
	for k := range narrowing {
		if !slices.Contains(listed, k) {
			t.Errorf("narrowing has a rule for %s, which is no policy key", k)
		}
	}
}
