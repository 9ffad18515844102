package policy_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/gitlease/policy/policytest"
)

func TestNarrowedNetworkKeepsTheTrustedWildcardsLimits(t *testing.T) {
	trusted := "[network]\nallow = [\"*.example.org:443\", \"api.example.com:443\", \"listed.example.org:443\"]\n"
	eff, err := policytest.ForAgent(t, trusted, "[network]\nallow = [\"a.example.org:443\", \"listed.example.org:443\"]\n", "")
	if err != nil {
		t.Fatal(err)
	}
	allow, err := eff.LeaseAllowlist()
	if err != nil {
		t.Fatal(err)
	}
	if d := allow.Check("a.example.org", 443); !d.Allowed || d.Verbatim {
		t.Fatalf("a name admitted through a wildcard: %+v, want allowed but not verbatim (no private addresses)", d)
	}
	if d := allow.Check("listed.example.org", 443); !d.Allowed || !d.Verbatim {
		t.Fatalf("a name trusted policy lists: %+v, want verbatim", d)
	}
	for _, host := range []string{"api.example.com", "b.example.org"} {
		if allow.Check(host, 443).Allowed {
			t.Fatalf("%s is allowed although the .lease.toml dropped it", host)
		}
	}
	if err := eff.SelectNetwork([]string{"a.example.org:443"}); err != nil {
		t.Fatal(err)
	}
	if allow, _ = eff.LeaseAllowlist(); len(allow) != 1 || allow.Check("a.example.org", 443).Verbatim || eff.Sources["network.allow"] != "--net" {
		t.Fatalf("--net: %v (%s)", allow, eff.Sources["network.allow"])
	}
	for _, asked := range []string{"listed.example.org:443", "evil.com:443", "a.example.org:80", "*.example.org:443"} {
		if err := eff.SelectNetwork([]string{asked}); err == nil {
			t.Errorf("--net %s was accepted beyond the lease's allowlist", asked)
		}
	}
}

func TestAgentPresetJoinsTheTrustedPolicyBeforeNarrowing(t *testing.T) {
	eff, err := policytest.ForAgent(t, "", "", "claude")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(eff.Network.Allow, []string{"api.anthropic.com:443"}) || !slices.Equal(eff.Credentials, []string{"ANTHROPIC_API_KEY"}) ||
		eff.Sources["network.allow"] != "agent claude" || eff.Agent() == nil {
		t.Fatalf("policy for claude: %+v %v", eff.Policy, eff.Sources)
	}
	if err := eff.SelectCredentials(nil); err != nil || !slices.Equal(eff.Credentials, []string{"ANTHROPIC_API_KEY"}) {
		t.Fatalf("claude's credentials: %v %v", eff.Credentials, err)
	}
	// The repository may ask for the preset's destination only when the
	// lease runs the preset.
	repoWants := "[network]\nallow = [\"api.anthropic.com:443\"]\n"
	if _, err := policytest.ForAgent(t, "", repoWants, "claude"); err != nil {
		t.Fatal(err)
	}
	if _, err := policytest.ForAgent(t, "", repoWants, ""); !errors.Is(err, policy.ErrWiden) {
		t.Fatalf("without the preset: %v, want ErrWiden", err)
	}
	// A repository that wants no network narrows the preset's away; one
	// that drops the preset's credential makes the start fail, not the agent.
	eff, err = policytest.ForAgent(t, "", "credentials = []\n[network]\nallow = []\n", "claude")
	if err != nil || len(eff.Network.Allow) != 0 {
		t.Fatalf("narrowed: %v %v", eff.Network.Allow, err)
	}
	if err := eff.SelectCredentials(nil); err == nil || !strings.Contains(err.Error(), "needs credential ANTHROPIC_API_KEY") {
		t.Fatalf("got %v", err)
	}
	if _, err := policytest.ForAgent(t, "", "", "nosuchagent"); err == nil || !strings.Contains(err.Error(), "claude") {
		t.Fatalf("an unknown preset: %v", err)
	}
}

func TestTrustedPresetReplacesTheBuiltinOne(t *testing.T) {
	trusted := "[agents.claude]\ncommand = [\"/opt/claude/bin/claude\", \"-p\", \"{prompt}\"]\nread_only = [\"/opt/claude\"]\n" +
		"[agents.mine]\ncommand = [\"mine\"]\nnetwork = [\"llm.internal:8443\"]\ncredentials = [\"MINE_KEY\"]\nherdr_agent = \"mine\"\n"
	eff, err := policytest.ForAgent(t, trusted, "", "claude")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(eff.ReadOnly, []string{"/opt/claude"}) || len(eff.Network.Allow) != 0 || len(eff.Credentials) != 0 || eff.Agent().Source != policy.SourceTrusted {
		t.Fatalf("the trusted preset should replace the built-in one whole: %+v", eff.Policy)
	}
	if cmd := policy.WithPrompt(eff.Agent().Command, "fix it"); !slices.Equal(cmd, []string{"/opt/claude/bin/claude", "-p", "fix it"}) || !eff.Agent().TakesPrompt() {
		t.Fatalf("command %q", cmd)
	}
	mine := policy.Presets(eff.Policy)[slices.IndexFunc(policy.Presets(eff.Policy), func(p policy.NamedPreset) bool { return p.Name == "mine" })]
	if mine.TakesPrompt() {
		t.Fatal("a preset without {prompt} takes its prompt on standard input")
	}
}

func TestRepoMayNotDefinePresetsOrCredentialFiles(t *testing.T) {
	for _, leaseToml := range []string{
		"[agents.claude]\ncommand = [\"sh\", \"-c\", \"curl evil\"]\n",
		"[agents.evil]\ncommand = [\"x\"]\n",
		"[credential_files]\nANTHROPIC_API_KEY = \"/etc/shadow\"\n",
	} {
		if _, err := policytest.ForAgent(t, "credentials = [\"ANTHROPIC_API_KEY\"]\n", leaseToml, "claude"); !errors.Is(err, policy.ErrWiden) || !strings.Contains(err.Error(), "only trusted policy") {
			t.Errorf("%q: got %v, want ErrWiden", leaseToml, err)
		}
	}
}

func TestPolicyRefusesBadDestinationsCredentialsAndPresets(t *testing.T) {
	for _, trusted := range []string{
		"[network]\nallow = [\"api.example.com\"]\n",
		"[network]\nallow = [\"*.10.0.0.1:443\"]\n",
		"credentials = [\"NOT-A-NAME\"]\n",
		"[credential_files]\nKEY = \"relative/key\"\n",
		"[agents.x]\ncommand = []\n",
		"[agents.Bad_Name]\ncommand = [\"x\"]\n",
		"[agents.x]\ncommand = [\"x\"]\nherdr_agent = \"Not A Kind\"\n",
		"[agents.x]\ncommand = [\"x\"]\nnetwork = [\"x:0\"]\n",
		"[agents.x]\ncommand = [\"x\"]\ncomand = [\"typo\"]\n",
	} {
		if _, _, err := policytest.Repo(t, trusted, ""); err == nil {
			t.Errorf("%q was accepted", trusted)
		}
	}
}

func TestBuiltinPresetsAreValid(t *testing.T) {
	p := policy.Default()
	for _, preset := range policy.Presets(p) {
		if err := preset.Validate(); err != nil {
			t.Errorf("%s: %v", preset.Name, err)
		}
		if !preset.TakesPrompt() {
			t.Errorf("%s takes no prompt", preset.Name)
		}
		if preset.HerdrAgent == "" || len(preset.Network) == 0 || len(preset.Credentials) == 0 {
			t.Errorf("%s lacks a Herdr kind, a destination or a credential: %+v", preset.Name, preset)
		}
	}
	if len(policy.Presets(p)) != 5 {
		t.Fatalf("%d built-in presets", len(policy.Presets(p)))
	}
}
