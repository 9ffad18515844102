package gitlease

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/gitlease/policy/policytest"
)

const trustedCrabbox = `provider = "crabbox"
[crabbox]
provider = "local-container"
sandboxed = ["local-container", "firecracker"]
ttl = "2h"
max_copy_bytes = "1GiB"
`

// The [crabbox] table comes from trusted policy; a .lease.toml may narrow
// it (fewer sandboxed providers, a shorter life, a smaller copy), and the
// provider a lease builds is the recorded policy's.
func TestCrabboxPolicyNarrows(t *testing.T) {
	repo := "[crabbox]\nsandboxed = [\"local-container\"]\nttl = \"1h\"\nidle_timeout = \"5m\"\nmax_copy_bytes = \"64MiB\"\n"
	_, eff, err := policytest.Repo(t, trustedCrabbox, repo)
	if err != nil {
		t.Fatal(err)
	}
	c := eff.Crabbox
	if c.Provider != "local-container" || !slices.Equal(c.Sandboxed, []string{"local-container"}) || c.Bin != "crabbox" ||
		c.TTL != policy.Duration(time.Hour) || c.IdleTimeout != policy.Duration(5*time.Minute) || c.MaxCopyBytes != 64<<20 {
		t.Fatalf("crabbox policy: %+v", c)
	}
	if eff.Sources["crabbox.provider"] != policy.SourceTrusted || eff.Sources["crabbox.bin"] != policy.SourceDefault ||
		!strings.HasPrefix(eff.Sources["crabbox.ttl"], ".lease.toml at ") {
		t.Fatalf("sources: %v", eff.Sources)
	}
	p := crabboxProvider(eff)
	if p.CrabboxProvider != "local-container" || p.Bin != "crabbox" || p.TTL != time.Hour || p.MaxCopyBytes != 64<<20 {
		t.Fatalf("provider from the policy: %+v", p)
	}
	if got, err := providerByName("crabbox", eff); err != nil || got.Name() != "crabbox" || !got.Sandboxed() {
		t.Fatalf("providerByName(crabbox) = %v, %v", got, err)
	}
}

func TestCrabboxPolicyRepoMayNotWiden(t *testing.T) {
	cases := []struct{ name, toml, want string }{
		{"another crabbox provider", "[crabbox]\nprovider = \"firecracker\"", "crabbox.provider = firecracker, but the trusted policy allows local-container"},
		{"another sandboxed provider", "[crabbox]\nsandboxed = [\"ssh\"]", `crabbox.sandboxed = ["ssh"]`},
		{"its own program", "[crabbox]\nbin = \"./tools/crabbox\"", "crabbox.bin = ./tools/crabbox, but the trusted policy allows crabbox"},
		{"a longer life", "[crabbox]\nttl = \"3h\"", "crabbox.ttl = 3h0m0s"},
		{"a longer idle timeout", "[crabbox]\nidle_timeout = \"1h\"", "crabbox.idle_timeout = 1h0m0s"},
		{"a larger copy", "[crabbox]\nmax_copy_bytes = \"2GiB\"", "crabbox.max_copy_bytes = 2GiB"},
		{"an unbounded copy", "[crabbox]\nmax_copy_bytes = 0", "crabbox.max_copy_bytes = 0"},
		{"crabbox variables", "[crabbox]\npass_env = [\"CRABBOX_LOCAL_CONTAINER_DOCKER_SOCKET\"]", "only trusted policy may set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := policytest.Repo(t, trustedCrabbox, tc.toml)
			if !errors.Is(err, policy.ErrWiden) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrWiden mentioning %q", err, tc.want)
			}
		})
	}
}

// Settings that are wrong wherever they come from, trusted policy included.
func TestCrabboxPolicyRefusesBadValues(t *testing.T) {
	cases := []struct{ name, toml, want string }{
		{"a relative program path", "[crabbox]\nbin = \"bin/crabbox\"", "crabbox.bin"},
		{"an absolute program path", "[crabbox]\nbin = \"/home/me/bin/crabbox\"", "holds no path"},
		{"no program", "[crabbox]\nbin = \"\"", "crabbox.bin"},
		{"no lifetime", "[crabbox]\nttl = \"0s\"", "crabbox.ttl"},
		{"no idle timeout", "[crabbox]\nidle_timeout = \"0s\"", "crabbox.idle_timeout"},
		{"an unbounded copy", "[crabbox]\nmax_copy_bytes = 0", "crabbox.max_copy_bytes"},
		{"a box that expires before the agent's time is up", "provider = \"crabbox\"\n[limits]\nwall = \"2h\"", "must outlive limits.wall = 2h0m0s"},
		{"an unknown key", "[crabbox]\nregion = \"eu\"", "crabbox.region"},
		{"a variable that is not Crabbox's", "[crabbox]\npass_env = [\"HOME\"]", "crabbox.pass_env"},
		{"the config variable", "[crabbox]\npass_env = [\"CRABBOX_CONFIG\"]", "never CRABBOX_CONFIG"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := policytest.Repo(t, tc.toml, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// Trusted policy names the CRABBOX_* variables crabbox may see; the
// provider a lease builds carries them.
func TestCrabboxPolicyPassEnv(t *testing.T) {
	_, eff, err := policytest.Repo(t, trustedCrabbox+"pass_env = [\"CRABBOX_COORDINATOR\", \"CRABBOX_COORDINATOR_TOKEN\"]\n", "")
	if err != nil {
		t.Fatal(err)
	}
	if p := crabboxProvider(eff); !slices.Equal(p.PassEnv, []string{"CRABBOX_COORDINATOR", "CRABBOX_COORDINATOR_TOKEN"}) {
		t.Fatalf("provider from the policy passes %v", p.PassEnv)
	}
}
