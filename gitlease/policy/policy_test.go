package policy_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/gitlease/policy/policytest"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

func TestPolicyDefaultsAreSafe(t *testing.T) {
	_, eff, err := policytest.Repo(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(eff.Network.Allow) != 0 || len(eff.Credentials) != 0 || eff.Limits.Memory != 4<<30 || eff.Limits.Processes != 256 ||
		eff.Limits.Disk != 2<<30 || eff.Limits.Output != 8<<20 || eff.Sources["limits.memory"] != policy.SourceDefault {
		t.Fatalf("defaults: %+v", eff)
	}
}

func TestPolicyTrustedMayWidenAndRepoMayNarrow(t *testing.T) {
	trusted := "[limits]\nmemory = \"8GiB\"\n[network]\nallow = [\"api.example.com:443\", \"*.example.org:443\"]\n"
	repo := "checks = [\"make test\"]\n[limits]\nmemory = \"1GiB\"\nprocesses = 10\n[network]\nallow = [\"a.example.org:443\"]\n[result]\nprotected = [\"secrets/\"]\n"
	_, eff, err := policytest.Repo(t, trusted, repo)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Limits.Memory != 1<<30 || eff.Limits.Processes != 10 || !slices.Equal(eff.Network.Allow, []string{"a.example.org:443"}) {
		t.Fatalf("narrowed policy: %+v", eff.Policy)
	}
	if !slices.Contains(eff.Result.Protected, "**/.github/") || !slices.Contains(eff.Result.Protected, "secrets/") {
		t.Fatalf("protected paths must be the union: %q", eff.Result.Protected)
	}
	if !strings.HasPrefix(eff.Sources["limits.memory"], ".lease.toml at ") || eff.Sources["limits.wall"] != policy.SourceDefault {
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
			_, _, err := policytest.Repo(t, trusted+"[limits]\nrequire_cgroup = true\n", tc.toml)
			if !errors.Is(err, policy.ErrWiden) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrWiden mentioning %q", err, tc.want)
			}
		})
	}
}

func TestPolicyRefusesUnknownKeysAndBadValues(t *testing.T) {
	for _, toml := range []string{"[limit]\nmemory = \"1GiB\"", "[limits]\nmemory = \"lots\"", "[result]\nsymlinks = \"anywhere\""} {
		if _, _, err := policytest.Repo(t, "", toml); err == nil {
			t.Errorf("%q was accepted", toml)
		}
	}
	// Only protected paths may wait for acceptance, even in trusted policy.
	if _, _, err := policytest.Repo(t, "[result]\naccept_at_apply = [\"credential\"]", ""); err == nil || !strings.Contains(err.Error(), "only protected-path") {
		t.Errorf("accept_at_apply = [\"credential\"]: %v", err)
	}
}

func TestPolicyFileInsideRepositoryIsRefused(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"policy.toml": "[limits]\nmemory = \"64GiB\"\n"})
	refstest.Git(t, dir, "config", "lease.policy", filepath.Join(dir, "policy.toml"))
	repo, _ := refs.Open(dir)
	head, _ := repo.ResolveCommit("HEAD")
	if _, err := policy.Load(repo, head); err == nil || !strings.Contains(err.Error(), "inside the repository") {
		t.Fatalf("got %v", err)
	}
}

// Trusted policy may let entries of the sandbox's seccomp filter through;
// a .lease.toml may only let fewer through.
func TestPolicySeccompAllow(t *testing.T) {
	trusted := "[bwrap]\nseccomp_allow = [\"perf\", \"io_uring\"]\n"
	_, eff, err := policytest.Repo(t, trusted, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(eff.Bwrap.SeccompAllow, []string{"perf", "io_uring"}) || eff.Sources["bwrap.seccomp_allow"] != policy.SourceTrusted {
		t.Fatalf("bwrap.seccomp_allow = %q from %s", eff.Bwrap.SeccompAllow, eff.Sources["bwrap.seccomp_allow"])
	}

	_, eff, err = policytest.Repo(t, trusted, "[bwrap]\nseccomp_allow = [\"perf\"]")
	if err != nil || !slices.Equal(eff.Bwrap.SeccompAllow, []string{"perf"}) || !strings.HasPrefix(eff.Sources["bwrap.seccomp_allow"], ".lease.toml at ") {
		t.Fatalf("narrowed: %v %q", err, eff.Bwrap.SeccompAllow)
	}
	_, _, err = policytest.Repo(t, trusted, "[bwrap]\nseccomp_allow = [\"perf\", \"keyring\"]")
	if !errors.Is(err, policy.ErrWiden) || !strings.Contains(err.Error(), `bwrap.seccomp_allow = ["keyring"]`) {
		t.Fatalf("widened: %v", err)
	}

	_, eff, err = policytest.Repo(t, "", "")
	if err != nil || eff.Bwrap.SeccompAllow == nil || len(eff.Bwrap.SeccompAllow) != 0 {
		t.Fatalf("default: %v %#v", err, eff.Bwrap.SeccompAllow)
	}
	_, _, err = policytest.Repo(t, "[bwrap]\nseccomp_allow = [\"ptrace\"]\n", "")
	if err == nil || !strings.Contains(err.Error(), `bwrap.seccomp_allow (trusted policy): unknown seccomp entry "ptrace" (known: keyring, mount,`) {
		t.Fatalf("unknown entry: %v", err)
	}
}
