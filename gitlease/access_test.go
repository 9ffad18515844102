package gitlease

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// leasePolicy loads the policy of a lease running agent (may be empty) on
// a repository whose base carries leaseToml, under trusted policy trusted.
func leasePolicy(t *testing.T, trusted, leaseToml, agent string) (*Effective, error) {
	t.Helper()
	repo, _, _ := policyRepo(t, trusted, leaseToml)
	head, _ := repo.ResolveCommit("HEAD")
	return loadPolicy(repo, head, agent)
}

func TestNarrowedNetworkKeepsTheTrustedWildcardsLimits(t *testing.T) {
	trusted := "[network]\nallow = [\"*.example.org:443\", \"api.example.com:443\", \"listed.example.org:443\"]\n"
	eff, err := leasePolicy(t, trusted, "[network]\nallow = [\"a.example.org:443\", \"listed.example.org:443\"]\n", "")
	if err != nil {
		t.Fatal(err)
	}
	allow, err := eff.leaseAllowlist()
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
	if err := eff.selectNetwork([]string{"a.example.org:443"}); err != nil {
		t.Fatal(err)
	}
	if allow, _ = eff.leaseAllowlist(); len(allow) != 1 || allow.Check("a.example.org", 443).Verbatim || eff.Sources["network.allow"] != "--net" {
		t.Fatalf("--net: %v (%s)", allow, eff.Sources["network.allow"])
	}
	for _, asked := range []string{"listed.example.org:443", "evil.com:443", "a.example.org:80", "*.example.org:443"} {
		if err := eff.selectNetwork([]string{asked}); err == nil {
			t.Errorf("--net %s was accepted beyond the lease's allowlist", asked)
		}
	}
}

func TestAgentPresetJoinsTheTrustedPolicyBeforeNarrowing(t *testing.T) {
	eff, err := leasePolicy(t, "", "", "claude")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(eff.Network.Allow, []string{"api.anthropic.com:443"}) || !slices.Equal(eff.Credentials, []string{"ANTHROPIC_API_KEY"}) ||
		eff.Sources["network.allow"] != "agent claude" || eff.agent == nil {
		t.Fatalf("policy for claude: %+v %v", eff.Policy, eff.Sources)
	}
	if err := eff.selectCredentials(nil); err != nil || !slices.Equal(eff.Credentials, []string{"ANTHROPIC_API_KEY"}) {
		t.Fatalf("claude's credentials: %v %v", eff.Credentials, err)
	}
	// The repository may ask for the preset's destination only when the
	// lease runs the preset.
	repoWants := "[network]\nallow = [\"api.anthropic.com:443\"]\n"
	if _, err := leasePolicy(t, "", repoWants, "claude"); err != nil {
		t.Fatal(err)
	}
	if _, err := leasePolicy(t, "", repoWants, ""); !errors.Is(err, ErrWiden) {
		t.Fatalf("without the preset: %v, want ErrWiden", err)
	}
	// A repository that wants no network narrows the preset's away; one
	// that drops the preset's credential makes the start fail, not the agent.
	eff, err = leasePolicy(t, "", "credentials = []\n[network]\nallow = []\n", "claude")
	if err != nil || len(eff.Network.Allow) != 0 {
		t.Fatalf("narrowed: %v %v", eff.Network.Allow, err)
	}
	if err := eff.selectCredentials(nil); err == nil || !strings.Contains(err.Error(), "needs credential ANTHROPIC_API_KEY") {
		t.Fatalf("got %v", err)
	}
	if _, err := leasePolicy(t, "", "", "nosuchagent"); err == nil || !strings.Contains(err.Error(), "claude") {
		t.Fatalf("an unknown preset: %v", err)
	}
}

func TestTrustedPresetReplacesTheBuiltinOne(t *testing.T) {
	trusted := "[agents.claude]\ncommand = [\"/opt/claude/bin/claude\", \"-p\", \"{prompt}\"]\nread_only = [\"/opt/claude\"]\n" +
		"[agents.mine]\ncommand = [\"mine\"]\nnetwork = [\"llm.internal:8443\"]\ncredentials = [\"MINE_KEY\"]\nherdr_agent = \"mine\"\n"
	eff, err := leasePolicy(t, trusted, "", "claude")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(eff.ReadOnly, []string{"/opt/claude"}) || len(eff.Network.Allow) != 0 || len(eff.Credentials) != 0 || eff.agent.Source != SourceTrusted {
		t.Fatalf("the trusted preset should replace the built-in one whole: %+v", eff.Policy)
	}
	if cmd := withPrompt(eff.agent.Command, "fix it"); !slices.Equal(cmd, []string{"/opt/claude/bin/claude", "-p", "fix it"}) || !eff.agent.takesPrompt() {
		t.Fatalf("command %q", cmd)
	}
	mine := presets(eff.Policy)[slices.IndexFunc(presets(eff.Policy), func(p namedPreset) bool { return p.Name == "mine" })]
	if mine.takesPrompt() {
		t.Fatal("a preset without {prompt} takes its prompt on standard input")
	}
}

func TestRepoMayNotDefinePresetsOrCredentialFiles(t *testing.T) {
	for _, leaseToml := range []string{
		"[agents.claude]\ncommand = [\"sh\", \"-c\", \"curl evil\"]\n",
		"[agents.evil]\ncommand = [\"x\"]\n",
		"[credential_files]\nANTHROPIC_API_KEY = \"/etc/shadow\"\n",
	} {
		if _, err := leasePolicy(t, "credentials = [\"ANTHROPIC_API_KEY\"]\n", leaseToml, "claude"); !errors.Is(err, ErrWiden) || !strings.Contains(err.Error(), "only trusted policy") {
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
		if _, _, err := policyRepo(t, trusted, ""); err == nil {
			t.Errorf("%q was accepted", trusted)
		}
	}
}

func TestBuiltinPresetsAreValid(t *testing.T) {
	p := DefaultPolicy()
	for _, preset := range presets(p) {
		if err := preset.validate(); err != nil {
			t.Errorf("%s: %v", preset.Name, err)
		}
		if !preset.takesPrompt() {
			t.Errorf("%s takes no prompt", preset.Name)
		}
		if preset.HerdrAgent == "" || len(preset.Network) == 0 || len(preset.Credentials) == 0 {
			t.Errorf("%s lacks a Herdr kind, a destination or a credential: %+v", preset.Name, preset)
		}
	}
	if len(presets(p)) != 5 {
		t.Fatalf("%d built-in presets", len(presets(p)))
	}
}

func TestCredentialsComeOnlyWhenAsked(t *testing.T) {
	trusted := "credentials = [\"GITLEASE_A\", \"GITLEASE_B\"]\n[credential_files]\nGITLEASE_B = \"~/b.key\"\n"
	home := t.TempDir()
	t.Setenv("HOME", home)
	must(t, os.WriteFile(filepath.Join(home, "b.key"), []byte("bee-key"), 0o600))
	eff, err := leasePolicy(t, trusted, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := eff.selectCredentials(nil); err != nil || len(eff.Credentials) != 0 || eff.Sources["credentials"] != "none asked for" {
		t.Fatalf("unasked: %v %v %q", eff.Credentials, err, eff.Sources["credentials"])
	}
	eff, _ = leasePolicy(t, trusted, "", "")
	if err := eff.selectCredentials([]string{"GITLEASE_C"}); err == nil || !strings.Contains(err.Error(), "--credential GITLEASE_C") {
		t.Fatalf("a credential policy does not allow: %v", err)
	}
	if err := eff.selectCredentials([]string{"GITLEASE_A", "GITLEASE_B"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eff.resolveCredentials(); err == nil || !strings.Contains(err.Error(), "GITLEASE_A is not set") {
		t.Fatalf("an unset variable: %v", err)
	}
	t.Setenv("GITLEASE_A", "ay-value")
	creds, err := eff.resolveCredentials()
	if err != nil || len(creds) != 2 || creds[0].Kind != "env" || string(creds[1].value) != "bee-key" || creds[1].Kind != "file" {
		t.Fatalf("resolved %+v %v", creds, err)
	}
	unasked, _ := leasePolicy(t, trusted, "", "")
	unasked.selectCredentials(nil)
	if eff.Digest() == unasked.Digest() {
		t.Fatal("the digest does not cover the credentials' names")
	}
}

func TestFindAgentLooksWhereTheSandboxLooks(t *testing.T) {
	if p, err := findAgent("sh", nil, true); err != nil || !strings.HasSuffix(p.Path, "/sh") || p.ByPath {
		t.Fatalf("sh: %+v %v", p, err)
	}
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "hidden-agent"), []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if _, err := findAgent("hidden-agent", nil, true); err == nil || !strings.Contains(err.Error(), "cannot see") {
		t.Fatalf("an agent outside the sandbox's view: %v", err)
	}
	if _, err := findAgent(filepath.Join(dir, "hidden-agent"), []string{dir}, true); err != nil {
		t.Fatalf("an agent under a read-only path: %v", err)
	}
	// On your PATH, off the sandbox's, in a directory the sandbox shows:
	// the lease runs it by its path.
	if p, err := findAgent("hidden-agent", []string{dir}, true); err != nil || p.Path != filepath.Join(dir, "hidden-agent") || !p.ByPath {
		t.Fatalf("an agent on your PATH under a read-only path: %+v %v", p, err)
	}
	if _, err := findAgent("hidden-agent", nil, false); err != nil {
		t.Fatalf("trusted_local finds agents on your PATH: %v", err)
	}
	if _, err := findAgent("no-such-agent-anywhere", nil, true); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("got %v", err)
	}
}

func TestAgentsListsPresetsAndInstalls(t *testing.T) {
	repo, _, err := policyRepo(t, "[agents.shell]\ncommand = [\"sh\", \"-c\", \"{prompt}\"]\n", "")
	if err != nil {
		t.Fatal(err)
	}
	list, err := Agents(repo)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
		if a.Name == "shell" && (a.Installed == "" || a.Source != SourceTrusted) {
			t.Fatalf("shell: %+v", a)
		}
		if a.Installed == "" && a.Missing == "" {
			t.Fatalf("%s: neither installed nor missing", a.Name)
		}
	}
	if !slices.Equal(names, []string{"aider", "claude", "codex", "gemini", "opencode", "shell"}) {
		t.Fatalf("presets %v", names)
	}
}

// TestRunnerRebuildsAccessFromTrustedPolicy plays a lease's runner: it
// rebuilds the proxy's allowlist from trusted policy (wildcard limits
// kept), and refuses a credential whose value changed since the start, or
// a destination trusted policy no longer allows.
func TestRunnerRebuildsAccessFromTrustedPolicy(t *testing.T) {
	trusted := "credentials = [\"GITLEASE_A\"]\n[network]\nallow = [\"*.example.org:443\"]\n"
	repo, eff, err := policyRepo(t, trusted, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITLEASE_A", "first-value")
	opts := StartOptions{Command: []string{"true"}, Net: []string{"a.example.org:443"}, Credentials: []string{"GITLEASE_A"}}
	command, records, err := prepareLaunch(eff, opts, true)
	if err != nil {
		t.Fatal(err)
	}
	x := &Execution{Repo: repo, Lease: &Lease{ID: "0123456789ab", Command: command, Policy: eff, Credentials: records}}
	sandboxed := bwrap.Provider{}
	l, err := x.launchFor(sandboxed)
	if err != nil {
		t.Fatal(err)
	}
	if d := l.allow.Check("a.example.org", 443); !d.Allowed || d.Verbatim || len(l.creds) != 1 || string(l.creds[0].value) != "first-value" {
		t.Fatalf("rebuilt allowlist %v (%+v), credentials %+v", l.allow, d, l.creds)
	}
	t.Setenv("GITLEASE_A", "second-value")
	if _, err := x.launchFor(sandboxed); err == nil || !strings.Contains(err.Error(), "changed since the lease started") {
		t.Fatalf("a changed credential: %v", err)
	}
	t.Setenv("GITLEASE_A", "first-value")
	path, _ := TrustedPolicyPath(repo)
	must(t, os.WriteFile(path, []byte("credentials = [\"GITLEASE_A\"]\n"), 0o644))
	if _, err := x.launchFor(sandboxed); err == nil || !strings.Contains(err.Error(), "trusted policy changed") {
		t.Fatalf("a destination trusted policy dropped: %v", err)
	}
}
