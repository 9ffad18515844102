package gitlease

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/gitlease/policy/policytest"
)

// realAgentPackages are the npm packages of the built-in presets' agents
// that TestRealAgentsTakeThePromptAsAPrompt and
// TestSandboxRealAgentCompletesATurn run when they are installed.
var realAgentPackages = map[string]string{
	"claude":   "@anthropic-ai/claude-code",
	"codex":    "@openai/codex",
	"gemini":   "@google/gemini-cli",
	"opencode": "opencode-ai",
}

// TestRealAgentsTakeThePromptAsAPrompt runs each built-in preset's
// command, with the prompt "--version", on the real agent CLI (when it is
// on PATH) against a fake model server, given as the preset's base_url,
// that refuses every request: the agent must send the prompt to the model
// as the user's message, not print its version. Its other traffic goes to
// a proxy that is not there.
func TestRealAgentsTakeThePromptAsAPrompt(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(realAgentPackages)) {
		t.Run(name, func(t *testing.T) {
			bin := realAgent(t, name)
			// The prompt as a JSON string value in the request: the
			// user's message of each agent's API.
			const prompt = `:"--version"`
			model := newFakeModel(t, prompt)
			// The model's address as a preset's base_url gives it.
			eff, err := policytest.ForAgent(t, "[agents."+name+"]\nbase_url = \""+model.URL+"\"\n", "", name)
			if err != nil {
				t.Fatal(err)
			}
			preset := eff.Agent()
			argv := policy.WithPrompt(preset.Command, "--version")
			home := t.TempDir()
			for rel, content := range preset.HomeFiles {
				must(t, os.MkdirAll(filepath.Join(home, filepath.Dir(rel)), 0o755))
				must(t, os.WriteFile(filepath.Join(home, rel), []byte(content), 0o644))
			}
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1", "NO_PROXY=127.0.0.1"}
			for _, c := range preset.Credentials {
				env = append(env, c+"=fake-key")
			}
			for k, v := range preset.Env {
				env = append(env, k+"="+v)
			}
			version, err := exec.Command(bin, "--version").Output()
			if err != nil || len(strings.TrimSpace(string(version))) == 0 {
				t.Fatalf("%s --version: %v", name, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, argv[1:]...)
			cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, t.TempDir(), &out, &out
			// The agent's own children (its servers, its workers) go with it.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			must(t, cmd.Start())
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			// An agent that took the prompt for its version flag prints
			// and exits without calling its model: once the model has the
			// prompt, the rest of the agent's run (its retries, its
			// shutdown) says nothing more.
			select {
			case <-exited:
			case <-model.prompted:
				cancel()
				<-exited
			}
			if strings.Contains(out.String(), strings.TrimSpace(string(version))) {
				t.Fatalf("%q printed its version:\n%s", argv, out.String())
			}
			if !model.received(prompt) {
				t.Fatalf("%q never sent the prompt to the model (%d requests):\n%s", argv, len(model.bodies()), out.String())
			}
		})
	}
}

// realAgent returns the path of the real agent CLI name, found on PATH
// after $REAL_AGENTS_BIN (where scripts/test.sh installs Claude Code and
// Codex from npm), which it puts first on the test's PATH, or skips the
// test.
func realAgent(t *testing.T, name string) string {
	if dir := os.Getenv("REAL_AGENTS_BIN"); dir != "" {
		t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed: npm install -g %s, then put its bin directory on PATH or in $REAL_AGENTS_BIN (scripts/test.sh installs Claude Code and Codex)", name, realAgentPackages[name])
	}
	return bin
}

// fakeModel is a model server that records each request's body and
// refuses it, as a model API refuses a bad request (which agents do not
// retry).
type fakeModel struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
	// prompted is closed when a request's body first holds the marker.
	prompted chan struct{}
}

func newFakeModel(t *testing.T, marker string) *fakeModel {
	m := &fakeModel{prompted: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Upgrade") != "" {
			// No WebSocket here: Codex then posts over HTTP, at once
			// on a 426 (after six seconds of retries on a 404).
			http.Error(w, "no websocket", http.StatusUpgradeRequired)
			return
		}
		m.mu.Lock()
		if strings.Contains(string(b), marker) && !slices.ContainsFunc(m.got, func(g string) bool { return strings.Contains(g, marker) }) {
			close(m.prompted)
		}
		m.got = append(m.got, string(b))
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","code":400,"status":"INVALID_ARGUMENT","message":"fake model: no model here"}}`)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *fakeModel) bodies() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.got)
}

// received reports whether a request's body held s.
func (m *fakeModel) received(s string) bool {
	return slices.ContainsFunc(m.bodies(), func(b string) bool { return strings.Contains(b, s) })
}

// TestPresetOptionsAreInTheCLIsHelp checks each built-in preset's options
// against the installed CLI's own help (of its subcommand, for those that
// run one: codex exec, opencode run): an option the CLI renamed or dropped
// would make every lease of the preset fail at its first argument.
func TestPresetOptionsAreInTheCLIsHelp(t *testing.T) {
	for name := range realAgentPackages {
		t.Run(name, func(t *testing.T) {
			bin := realAgent(t, name)
			preset, err := policy.Preset(policy.Default(), name)
			if err != nil {
				t.Fatal(err)
			}
			var sub, options []string
			for _, arg := range preset.Command[1:] {
				switch {
				case arg == "--":
				case strings.HasPrefix(arg, "-"):
					options = append(options, strings.SplitN(arg, "=", 2)[0])
				case len(options) == 0 && !policy.HasPromptVar([]string{arg}):
					sub = append(sub, arg) // a subcommand, before any option
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append(sub, "--help")...)
			cmd.Env = append(os.Environ(), "NO_COLOR=1", "HOME="+t.TempDir())
			help, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s --help: %v\n%s", strings.Join(append([]string{name}, sub...), " "), err, help)
			}
			for _, opt := range options {
				if !regexp.MustCompile(`(^|[\s,])` + regexp.QuoteMeta(opt) + `([\s,=<\[]|$)`).Match(help) {
					t.Errorf("%s %s: its help does not list %s:\n%s", name, strings.Join(sub, " "), opt, help)
				}
			}
			if len(options) == 0 {
				t.Fatalf("the %s preset has no options to check: %q", name, preset.Command)
			}
		})
	}
}
