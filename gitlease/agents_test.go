package gitlease

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// TestSandboxPresetGetsItsPromptInItsCommandOnly runs a preset whose
// command says {prompt}: the agent finds the prompt there, its standard
// input is empty (many agents append it to the prompt), the record keeps
// the command with {prompt}, names the preset and its environment's names
// (not values), and the preset's environment reaches the agent.
func TestSandboxPresetGetsItsPromptInItsCommandOnly(t *testing.T) {
	trustedTOML := "[agents.echoer]\ncommand = [\"bash\", \"-c\", \"echo \\\"arg=$0\\\"; echo \\\"stdin=$(cat)\\\"; echo \\\"mode=$ECHOER_MODE\\\"\", \"{prompt}\"]\nenv = { ECHOER_MODE = \"quiet\" }\n"
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
	x, out := runLease(t, repo, StartOptions{Agent: "echoer", Prompt: "fix the bug"}, "")
	if !strings.Contains(out, "arg=fix the bug\nstdin=\nmode=quiet\n") {
		t.Fatalf("the agent saw:\n%s", out)
	}
	if x.Lease.AgentPreset != "echoer" || x.Lease.Command[3] != "{prompt}" || x.Lease.Prompt == nil || !slices.Equal(x.Lease.AgentEnv, []string{"ECHOER_MODE"}) {
		t.Fatalf("record: preset %q, command %q, prompt %+v, env %q", x.Lease.AgentPreset, x.Lease.Command, x.Lease.Prompt, x.Lease.AgentEnv)
	}
	b, err := json.Marshal(x.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "quiet") {
		t.Fatalf("the record holds the preset's environment value: %s", b)
	}
}

// TestBuiltinPresetHomeFilesReachTheSandboxHome runs the gemini preset's
// command, with its environment and home files, on a stand-in for gemini
// that prints its arguments, an environment variable and the home file:
// the prompt "--version" arrives glued to --prompt, the settings file is in
// the sandbox's home, read-only, and its directory is the agent's to write
// (Gemini CLI writes its state next to it). The record names the home file.
func TestBuiltinPresetHomeFilesReachTheSandboxHome(t *testing.T) {
	bin := t.TempDir()
	standin := filepath.Join(bin, "gemini")
	must(t, os.WriteFile(standin, []byte("#!/bin/sh\nfor a; do echo \"arg=$a\"; done\necho \"relaunch=$GEMINI_CLI_NO_RELAUNCH\"\ncat \"$HOME/.gemini/settings.json\"\n(echo x > \"$HOME/.gemini/settings.json\") 2>/dev/null || echo settings read-only\necho state > \"$HOME/.gemini/installation_id\" && echo state written\n"), 0o755))
	gemini := builtinPreset(t, "gemini")
	gemini.Command = append([]string{standin}, gemini.Command[1:]...)
	gemini.ReadOnly = []string{bin}
	gemini.Credentials = nil
	trustedTOML := "[agents.gemini]\n" + tomlPreset(t, gemini)
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
	x, out := runLease(t, repo, StartOptions{Agent: "gemini", Prompt: "--version"}, "")
	want := "arg=--approval-mode\narg=yolo\narg=--prompt=--version\nrelaunch=true\n" + gemini.HomeFiles[".gemini/settings.json"] + "settings read-only\nstate written\n"
	if out != want {
		t.Fatalf("the agent saw:\n%s\nwant:\n%s", out, want)
	}
	if !slices.Equal(x.Lease.AgentHomeFiles, []string{".gemini/settings.json"}) || !slices.Equal(x.Lease.AgentEnv, slices.Sorted(maps.Keys(gemini.Env))) {
		t.Fatalf("record: home files %q, env %q", x.Lease.AgentHomeFiles, x.Lease.AgentEnv)
	}
}

// TestPresetHomeFileOutsideTheHomeIsRefused: a home file's path may not
// climb out of the home or be absolute.
func TestPresetHomeFileOutsideTheHomeIsRefused(t *testing.T) {
	for _, rel := range []string{"../etc/passwd", "/etc/passwd", "a/../../b", ".", ""} {
		trustedTOML := "[agents.x]\ncommand = [\"true\"]\nhome_files = { " + strconvQuote(rel) + " = \"x\" }\n"
		repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
		if _, err := Start(t.Context(), repo, StartOptions{Mode: Sandboxed, Agent: "x"}); err == nil || !strings.Contains(err.Error(), "not a path inside the home") {
			t.Errorf("home file %q: %v", rel, err)
		}
	}
}

// builtinPreset is git-lease's own preset named name.
func builtinPreset(t *testing.T, name string) policy.AgentPreset {
	t.Helper()
	p, err := policy.Preset(policy.Default(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p.AgentPreset
}

// tomlPreset writes a preset as the keys of a TOML table.
func tomlPreset(t *testing.T, p policy.AgentPreset) string {
	t.Helper()
	var b strings.Builder
	list := func(key string, v []string) {
		var q []string
		for _, s := range v {
			q = append(q, strconvQuote(s))
		}
		b.WriteString(key + " = [" + strings.Join(q, ", ") + "]\n")
	}
	table := func(key string, m map[string]string) {
		var q []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			q = append(q, strconvQuote(k)+" = "+strconvQuote(m[k]))
		}
		b.WriteString(key + " = { " + strings.Join(q, ", ") + " }\n")
	}
	list("command", p.Command)
	list("read_only", p.ReadOnly)
	list("network", p.Network)
	list("credentials", p.Credentials)
	table("env", p.Env)
	table("home_files", p.HomeFiles)
	return b.String()
}

// strconvQuote is a TOML basic string (JSON's escapes are TOML's).
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestRunnerRefusesAPresetChangedSinceTheStart: the runner rebuilds the
// agent's launch from trusted policy, so a preset whose command,
// environment names or home files are no longer those the lease recorded
// fails the lease rather than run something the record does not say.
func TestRunnerRefusesAPresetChangedSinceTheStart(t *testing.T) {
	trustedTOML := "[agents.echoer]\ncommand = [\"echo\", \"{prompt}\"]\nenv = { ECHOER_MODE = \"quiet\" }\n"
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
	x, _ := runLease(t, repo, StartOptions{Agent: "echoer", Prompt: "hi"}, "")
	if _, err := x.launchFor(bwrap.Provider{}); err != nil {
		t.Fatalf("the unchanged preset: %v", err)
	}
	cfg := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git-lease", "policy.toml")
	for _, changed := range []string{
		"[agents.echoer]\ncommand = [\"echo\", \"{prompt}\"]\nenv = { ECHOER_MODE = \"quiet\", OTHER = \"x\" }\n",
		"[agents.echoer]\ncommand = [\"echo\", \"-n\", \"{prompt}\"]\nenv = { ECHOER_MODE = \"quiet\" }\n",
		"[agents.echoer]\ncommand = [\"echo\", \"{prompt}\"]\nenv = { ECHOER_MODE = \"quiet\" }\nhome_files = { \".rc\" = \"x\" }\n",
	} {
		must(t, os.WriteFile(cfg, []byte(changed), 0o644))
		if _, err := x.launchFor(bwrap.Provider{}); err == nil || !strings.Contains(err.Error(), "changed since the lease started") {
			t.Errorf("preset changed to\n%s: %v", changed, err)
		}
	}
}

// TestBaseURLOverABuiltinPreset: a trusted [agents.NAME] table that gives
// no command changes the built-in preset by the keys it sets, and its
// base_url reaches the agent its own way; the lease records the resolved
// command and the variable's name. An agent git-lease does not know how
// to point at a model is refused.
func TestBaseURLOverABuiltinPreset(t *testing.T) {
	for _, c := range []struct {
		name, env string
		command   []string
	}{
		{"claude", "ANTHROPIC_BASE_URL=http://model.test:8080", builtinPreset(t, "claude").Command},
		{"gemini", "GOOGLE_GEMINI_BASE_URL=http://model.test:8080", builtinPreset(t, "gemini").Command},
		{"opencode", `OPENCODE_CONFIG_CONTENT={"provider":{"anthropic":{"options":{"baseURL":"http://model.test:8080/v1"}}}}`, builtinPreset(t, "opencode").Command},
		{"codex", "", slices.Insert(slices.Clone(builtinPreset(t, "codex").Command), 1, "-c", "openai_base_url=http://model.test:8080/v1")},
	} {
		trustedTOML := "[agents." + c.name + "]\nbase_url = \"http://model.test:8080/\"\nnetwork = [\"model.test:8080\"]\n"
		repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
		eff, err := policy.LoadForAgent(repo, plumbing.ZeroHash, c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p := eff.Agent()
		if !slices.Equal(p.Command, c.command) || (c.env != "" && !slices.Contains(p.Environ(), c.env)) {
			t.Errorf("%s: command %q, env %q", c.name, p.Command, p.Environ())
		}
		if !slices.Equal(eff.Network.Allow, []string{"model.test:8080"}) || !slices.Equal(p.Credentials, builtinPreset(t, c.name).Credentials) {
			t.Errorf("%s: network %q, credentials %q", c.name, eff.Network.Allow, p.Credentials)
		}
	}
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "[agents.aider]\nbase_url = \"http://model.test:8080\"\n")
	if _, err := policy.LoadForAgent(repo, plumbing.ZeroHash, "aider"); err == nil || !strings.Contains(err.Error(), "does not know how aider takes its model's address") {
		t.Fatalf("aider with a base_url: %v", err)
	}
	repo, _ = sandboxRepo(t, map[string]string{"a": "a"}, "[agents.claude]\nbase_url = \"model.test:8080\"\n")
	if _, err := policy.LoadForAgent(repo, plumbing.ZeroHash, "claude"); err == nil || !strings.Contains(err.Error(), "give the model server's address") {
		t.Fatalf("a base_url without a scheme: %v", err)
	}
}

// TestBaseURLIsRecordedAsTheResolvedCommandAndEnvName runs a preset whose
// base_url becomes a variable: the lease records the variable's name, and
// the agent gets it.
func TestBaseURLIsRecordedAsTheResolvedCommandAndEnvName(t *testing.T) {
	trustedTOML := "[agents.claude]\ncommand = [\"bash\", \"-c\", \"echo \\\"url=$ANTHROPIC_BASE_URL\\\"\", \"{prompt}\"]\nbase_url = \"http://model.test:8080\"\n"
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
	// A preset with a command of its own is the trusted table whole; its
	// program's name (bash) is not an agent git-lease knows.
	if _, err := Start(t.Context(), repo, StartOptions{Mode: Sandboxed, Agent: "claude", Prompt: "x"}); err == nil || !strings.Contains(err.Error(), "does not know how bash") {
		t.Fatalf("a bash preset with a base_url: %v", err)
	}
	bin := t.TempDir()
	standin := filepath.Join(bin, "claude")
	must(t, os.WriteFile(standin, []byte("#!/bin/sh\necho \"url=$ANTHROPIC_BASE_URL\"\n"), 0o755))
	trustedTOML = "[agents.claude]\ncommand = [" + strconvQuote(standin) + ", \"--\", \"{prompt}\"]\nread_only = [" + strconvQuote(bin) + "]\nbase_url = \"http://model.test:8080\"\n"
	repo, _ = sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
	x, out := runLease(t, repo, StartOptions{Agent: "claude", Prompt: "x"}, "")
	if out != "url=http://model.test:8080\n" || !slices.Equal(x.Lease.AgentEnv, []string{"ANTHROPIC_BASE_URL"}) {
		t.Fatalf("the agent saw %q; the record's env: %q", out, x.Lease.AgentEnv)
	}
}
