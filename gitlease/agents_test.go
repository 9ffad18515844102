package gitlease

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// TestSandboxPresetGetsItsPromptInItsCommandOnly runs a preset whose
// command says {prompt}: the agent finds the prompt there, its standard
// input is empty (many agents append it to the prompt), the record keeps
// the command with {prompt}, names the preset and its environment's names
// (not values), and the preset's environment reaches the agent.
func TestSandboxPresetGetsItsPromptInItsCommandOnly(t *testing.T) {
	policy := "[agents.echoer]\ncommand = [\"bash\", \"-c\", \"echo \\\"arg=$0\\\"; echo \\\"stdin=$(cat)\\\"; echo \\\"mode=$ECHOER_MODE\\\"\", \"{prompt}\"]\nenv = { ECHOER_MODE = \"quiet\" }\n"
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, policy)
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

// TestBuiltinPresetsNeverTakeThePromptAsAnOption checks the shape of each
// built-in preset's command with prompts that look like options: the
// prompt is an argument of its own right after "--" (past which the
// agents' parsers take no option), or glued to its option ("--prompt=…"),
// and nothing else in the command changes. TestRealAgentsTakeThePromptAsAPrompt
// runs the real parsers.
func TestBuiltinPresetsNeverTakeThePromptAsAnOption(t *testing.T) {
	for name, p := range builtinPresets() {
		for _, prompt := range []string{"--version", "-x", "--help me fix it"} {
			argv := withPrompt(p.Command, prompt)
			i := slices.IndexFunc(p.Command, func(a string) bool { return strings.Contains(a, promptVar) })
			switch {
			case i < 0:
				t.Errorf("%s: no %s in %q", name, promptVar, p.Command)
			case p.Command[i] == promptVar:
				if i == 0 || argv[i-1] != "--" || argv[i] != prompt || slices.Index(argv, "--") != i-1 {
					t.Errorf("%s: prompt %q is not the argument right after the first \"--\": %q", name, prompt, argv)
				}
			default:
				opt, v, ok := strings.Cut(p.Command[i], "=")
				if !ok || v != promptVar || !strings.HasPrefix(opt, "--") || argv[i] != opt+"="+prompt {
					t.Errorf("%s: prompt %q is neither after \"--\" nor glued to an option: %q", name, prompt, argv)
				}
			}
			if argv[0] != p.Command[0] || len(argv) != len(p.Command) {
				t.Errorf("%s: prompt %q changed the command: %q", name, prompt, argv)
			}
		}
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
	gemini := builtinPresets()["gemini"]
	gemini.Command = append([]string{standin}, gemini.Command[1:]...)
	gemini.ReadOnly = []string{bin}
	gemini.Credentials = nil
	policy := "[agents.gemini]\n" + tomlPreset(t, gemini)
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, policy)
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
		policy := "[agents.x]\ncommand = [\"true\"]\nhome_files = { " + strconvQuote(rel) + " = \"x\" }\n"
		repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, policy)
		if _, err := Start(t.Context(), repo, StartOptions{Mode: Sandboxed, Agent: "x"}); err == nil || !strings.Contains(err.Error(), "not a path inside the home") {
			t.Errorf("home file %q: %v", rel, err)
		}
	}
}

// tomlPreset writes a preset as the keys of a TOML table.
func tomlPreset(t *testing.T, p AgentPreset) string {
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
	policy := "[agents.echoer]\ncommand = [\"echo\", \"{prompt}\"]\nenv = { ECHOER_MODE = \"quiet\" }\n"
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, policy)
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
