package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// AgentPreset is how to run one coding agent in a lease: set in trusted
// policy as [agents.NAME], or built in (builtinPresets). A preset in
// trusted policy replaces the built-in one of the same name whole.
type AgentPreset struct {
	// Command starts the agent non-interactively; an argument's "{prompt}"
	// becomes start's --prompt.
	Command []string `toml:"command" json:"command"`
	// ReadOnly are host paths the agent's installation needs (added to the
	// lease's read_only).
	ReadOnly []string `toml:"read_only" json:"read_only"`
	// Network are the destinations the agent uses (added to the lease's
	// allowlist).
	Network []string `toml:"network" json:"network"`
	// Credentials are the names of the credentials the agent receives.
	Credentials []string `toml:"credentials" json:"credentials"`
	// Env is fixed, non-secret environment for the agent (its names are
	// recorded).
	Env map[string]string `toml:"env" json:"env"`
	// HomeFiles are files put in the sandboxed agent's home, read-only,
	// by path relative to the home: settings an agent reads only from
	// there (its system-wide settings would have to be owned by the
	// sandbox's root). Their paths are recorded.
	HomeFiles map[string]string `toml:"home_files" json:"home_files"`
	// HerdrAgent is the agent's kind for Herdr (HERDR_AGENT).
	HerdrAgent string `toml:"herdr_agent" json:"herdr_agent"`
	// BaseURL is the model server's address (its root, as
	// http://host:port), which git-lease gives the agent its own way (see
	// withBaseURL); its destination must be in network too.
	BaseURL string `toml:"base_url" json:"base_url,omitempty"`
}

// NamedPreset is a preset with its name and where it came from.
type NamedPreset struct {
	Name   string
	Source string // "built-in" or SourceTrusted
	AgentPreset
}

// promptVar is replaced by start's --prompt in a preset's command.
const promptVar = "{prompt}"

// builtinPresets are the presets git-lease knows without configuration.
// Each runs its agent non-interactively on the prompt, with its own
// approval prompts off (the lease's sandbox is the boundary), against its
// vendor's API with an API key from the environment. The prompt follows
// "--" or is glued to its option ("--prompt=…"), so that a prompt starting
// with "-" is never read as an option; telemetry, update checks and
// plugin fetches are off, so that a run contacts only its model's API;
// the agents keep their history and state in the home (aider, whose
// history files would land in /work, keeps none), never in /work.
// README's preset table says against which versions each was checked.
func builtinPresets() map[string]AgentPreset {
	return map[string]AgentPreset{
		"claude": {
			Command:     []string{"claude", "-p", "--permission-mode", "bypassPermissions", "--", promptVar},
			Network:     []string{"api.anthropic.com:443"},
			Credentials: []string{"ANTHROPIC_API_KEY"},
			// IS_SANDBOX lets bypassPermissions run where the sandbox's
			// user is root (Claude Code refuses it to root otherwise).
			Env: map[string]string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1"},
			// Choosing its default tips runs "ps aux" to find IDEs, and
			// procps's ps opens every process's /proc/N/environ (an
			// escape-attempt finding in a lease); a tip list of its own
			// that excludes the defaults skips that.
			HomeFiles: map[string]string{
				".claude/settings.json": `{"spinnerTipsOverride":{"excludeDefault":true,"tips":["This session runs in a git lease."]}}` + "\n",
			},
			HerdrAgent: "claude",
		},
		"codex": {
			// Without these, Codex contacts github.com (plugins) and
			// chatgpt.com (model discovery, analytics).
			Command: []string{"codex", "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
				"--disable", "plugins", "--disable", "api_key_model_discovery", "-c", "analytics.enabled=false", "--", promptVar},
			Network:     []string{"api.openai.com:443"},
			Credentials: []string{"CODEX_API_KEY"},
			HerdrAgent:  "codex",
		},
		"gemini": {
			Command:     []string{"gemini", "--approval-mode", "yolo", "--prompt=" + promptVar},
			Network:     []string{"generativelanguage.googleapis.com:443"},
			Credentials: []string{"GEMINI_API_KEY"},
			// GEMINI_CLI_NO_RELAUNCH keeps Gemini CLI from relaunching
			// itself with a heap of half the host's memory, past the
			// lease's memory bound.
			Env: map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "true"},
			// Usage statistics (play.googleapis.com) and update checks are
			// settings only; system-wide settings are skipped in a sandbox,
			// whose view of root-owned files is not root's. The API key is
			// the auth method even when GOOGLE_GEMINI_BASE_URL is set
			// (alone, that selects a "gateway" auth that headless runs
			// refuse).
			HomeFiles: map[string]string{
				".gemini/settings.json": `{"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"security":{"auth":{"selectedType":"gemini-api-key"}}}` + "\n",
			},
			HerdrAgent: "gemini",
		},
		"opencode": {
			Command:     []string{"opencode", "run", "--auto", "--", promptVar},
			Network:     []string{"api.anthropic.com:443"},
			Credentials: []string{"ANTHROPIC_API_KEY"},
			Env:         map[string]string{"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"},
			// opencode installs its plugin package into its config
			// directory from registry.npmjs.org unless node_modules exists
			// and the lock file lists it.
			HomeFiles: map[string]string{
				".config/opencode/package-lock.json":  `{"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}` + "\n",
				".config/opencode/node_modules/.keep": "",
			},
			HerdrAgent: "opencode",
		},
		"aider": {
			// Aider's history files default to the working directory;
			// its output is in the lease's agent log.
			Command: []string{"aider", "--message=" + promptVar, "--yes-always", "--no-git", "--no-check-update", "--no-show-release-notes", "--no-analytics",
				"--chat-history-file=/dev/null", "--input-history-file=/dev/null"},
			Network:     []string{"api.anthropic.com:443"},
			Credentials: []string{"ANTHROPIC_API_KEY"},
			HerdrAgent:  "aider",
		},
	}
}

// Presets are the built-in presets with trusted policy's on top, by name.
func Presets(p Policy) []NamedPreset {
	var out []NamedPreset
	for name, preset := range builtinPresets() {
		if _, ok := p.Agents[name]; !ok {
			out = append(out, NamedPreset{name, "built-in", preset})
		}
	}
	builtin := builtinPresets()
	for name, preset := range p.Agents {
		if b, ok := builtin[name]; ok && len(preset.Command) == 0 {
			preset = overBuiltin(b, preset)
		}
		out = append(out, NamedPreset{name, SourceTrusted, preset})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// overBuiltin is a trusted policy table that names a built-in preset and
// gives no command: the built-in preset with the keys the table sets
// (base_url, say) replaced.
func overBuiltin(b, t AgentPreset) AgentPreset {
	set := func(to *[]string, v []string) {
		if v != nil {
			*to = v
		}
	}
	set(&b.ReadOnly, t.ReadOnly)
	set(&b.Network, t.Network)
	set(&b.Credentials, t.Credentials)
	if t.Env != nil {
		b.Env = t.Env
	}
	if t.HomeFiles != nil {
		b.HomeFiles = t.HomeFiles
	}
	if t.HerdrAgent != "" {
		b.HerdrAgent = t.HerdrAgent
	}
	if t.BaseURL != "" {
		b.BaseURL = t.BaseURL
	}
	return b
}

// withBaseURL is the preset with its base_url given to its agent, known
// by its program's name, the agent's own way: Claude Code's
// ANTHROPIC_BASE_URL; Codex's openai_base_url setting (it ignores
// OPENAI_BASE_URL); Gemini CLI's GOOGLE_GEMINI_BASE_URL; opencode's
// Anthropic provider in OPENCODE_CONFIG_CONTENT. Codex and opencode take
// the API's root, base_url + "/v1".
func (p AgentPreset) withBaseURL() (AgentPreset, error) {
	if p.BaseURL == "" {
		return p, nil
	}
	p.Env = maps.Clone(p.Env)
	if p.Env == nil {
		p.Env = map[string]string{}
	}
	url := strings.TrimSuffix(p.BaseURL, "/")
	switch program := filepath.Base(p.Command[0]); program {
	case "claude":
		p.Env["ANTHROPIC_BASE_URL"] = url
	case "codex":
		p.Command = slices.Insert(slices.Clone(p.Command), 1, "-c", "openai_base_url="+url+"/v1")
	case "gemini":
		p.Env["GOOGLE_GEMINI_BASE_URL"] = url
	case "opencode":
		b, err := json.Marshal(map[string]any{"provider": map[string]any{"anthropic": map[string]any{"options": map[string]string{"baseURL": url + "/v1"}}}})
		if err != nil {
			return p, err
		}
		p.Env["OPENCODE_CONFIG_CONTENT"] = string(b)
	default:
		return p, fmt.Errorf("base_url: git-lease does not know how %s takes its model's address: give it in the preset's env or command instead", program)
	}
	return p, nil
}

// Preset is the preset named name, or an error that lists the known ones.
func Preset(p Policy, name string) (NamedPreset, error) {
	all := Presets(p)
	i := slices.IndexFunc(all, func(p NamedPreset) bool { return p.Name == name })
	if i < 0 {
		return NamedPreset{}, fmt.Errorf("no agent preset named %q (known: %s): define [agents.%s] in trusted policy", name, presetNames(all), name)
	}
	return all[i], nil
}

// presetNames lists the presets' names.
func presetNames(all []NamedPreset) string {
	var names []string
	for _, p := range all {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// addAgent joins preset name's read-only paths, destinations and
// credentials to the trusted policy in e, and remembers the preset. An
// empty name does nothing.
func (e *Effective) addAgent(name string) error {
	if name == "" {
		return nil
	}
	p, err := Preset(e.Policy, name)
	if err != nil {
		return err
	}
	if p.AgentPreset, err = p.withBaseURL(); err != nil {
		return fmt.Errorf("agent preset %s: %w", name, err)
	}
	source := "agent " + name
	join := func(key string, to *[]string, add []string) {
		if len(add) == 0 {
			return
		}
		if len(*to) == 0 {
			e.Sources[key] = source
		} else {
			e.Sources[key] += " + " + source
		}
		*to = union(*to, add)
	}
	join("read_only", &e.ReadOnly, p.ReadOnly)
	join("network.allow", &e.Network.Allow, p.Network)
	join("credentials", &e.Credentials, p.Credentials)
	e.agent = &p
	return nil
}

// Agent is the preset the policy was loaded for, or nil.
func (e *Effective) Agent() *NamedPreset { return e.agent }

// TakesPrompt reports whether the preset's command has a {prompt}: the
// agent gets its prompt there, not on its standard input.
func (p *NamedPreset) TakesPrompt() bool { return HasPromptVar(p.Command) }

// HasPromptVar reports whether a command has a {prompt} to fill.
func HasPromptVar(argv []string) bool {
	return slices.ContainsFunc(argv, func(arg string) bool { return strings.Contains(arg, promptVar) })
}

// WithPrompt is a preset's command with the prompt put in.
func WithPrompt(argv []string, prompt string) []string {
	out := make([]string, len(argv))
	for i, arg := range argv {
		out[i] = strings.ReplaceAll(arg, promptVar, prompt)
	}
	return out
}

// Environ is the preset's fixed environment, sorted.
func (p *NamedPreset) Environ() []string {
	var out []string
	for _, k := range p.EnvNames() {
		out = append(out, k+"="+p.Env[k])
	}
	return out
}

// EnvNames are the names of the preset's environment, sorted: what the
// lease records of it.
func (p *NamedPreset) EnvNames() []string { return slices.Sorted(maps.Keys(p.Env)) }

// HomePaths are the paths of the preset's home files, sorted.
func (p *NamedPreset) HomePaths() []string { return slices.Sorted(maps.Keys(p.HomeFiles)) }

// inHome reports whether rel, a home file's path, names a file inside the
// home: relative, clean and not climbing out.
func inHome(rel string) bool {
	return rel != "" && rel != "." && !path.IsAbs(rel) && path.Clean(rel) == rel && rel != ".." && !strings.HasPrefix(rel, "../")
}
