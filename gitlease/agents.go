package gitlease

import (
	"fmt"
	"maps"
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
	// Env is fixed, non-secret environment for the agent (recorded).
	Env map[string]string `toml:"env" json:"env"`
	// HerdrAgent is the agent's kind for Herdr (HERDR_AGENT).
	HerdrAgent string `toml:"herdr_agent" json:"herdr_agent"`
}

// namedPreset is a preset with its name and where it came from.
type namedPreset struct {
	Name   string
	Source string // "built-in" or SourceTrusted
	AgentPreset
}

// promptVar is replaced by start's --prompt in a preset's command.
const promptVar = "{prompt}"

// builtinPresets are the presets git-lease knows without configuration.
// Each runs its agent non-interactively on the prompt, with its own
// approval prompts off (the lease's sandbox is the boundary), against its
// vendor's API with an API key from the environment.
func builtinPresets() map[string]AgentPreset {
	return map[string]AgentPreset{
		"claude": {
			Command:     []string{"claude", "-p", promptVar, "--permission-mode", "bypassPermissions"},
			Network:     []string{"api.anthropic.com:443"},
			Credentials: []string{"ANTHROPIC_API_KEY"},
			Env:         map[string]string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
			HerdrAgent:  "claude",
		},
		"codex": {
			Command:     []string{"codex", "exec", "--sandbox", "danger-full-access", "--skip-git-repo-check", promptVar},
			Network:     []string{"api.openai.com:443"},
			Credentials: []string{"CODEX_API_KEY"},
			HerdrAgent:  "codex",
		},
		"gemini": {
			Command:     []string{"gemini", "--approval-mode", "yolo", "-p", promptVar},
			Network:     []string{"generativelanguage.googleapis.com:443"},
			Credentials: []string{"GEMINI_API_KEY"},
			Env:         map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"},
			HerdrAgent:  "gemini",
		},
		"opencode": {
			Command:     []string{"opencode", "run", promptVar},
			Network:     []string{"api.anthropic.com:443"},
			Credentials: []string{"ANTHROPIC_API_KEY"},
			Env:         map[string]string{"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"},
			HerdrAgent:  "opencode",
		},
		"aider": {
			Command:     []string{"aider", "--message", promptVar, "--yes-always", "--no-git", "--no-check-update", "--no-show-release-notes", "--no-analytics"},
			Network:     []string{"api.anthropic.com:443"},
			Credentials: []string{"ANTHROPIC_API_KEY"},
			HerdrAgent:  "aider",
		},
	}
}

// presets are the built-in presets with trusted policy's on top, by name.
func presets(p Policy) []namedPreset {
	var out []namedPreset
	for name, preset := range builtinPresets() {
		if _, ok := p.Agents[name]; !ok {
			out = append(out, namedPreset{name, "built-in", preset})
		}
	}
	for name, preset := range p.Agents {
		out = append(out, namedPreset{name, SourceTrusted, preset})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// presetNames lists the presets' names.
func presetNames(all []namedPreset) string {
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
	all := presets(e.Policy)
	i := slices.IndexFunc(all, func(p namedPreset) bool { return p.Name == name })
	if i < 0 {
		return fmt.Errorf("no agent preset named %q (known: %s): define [agents.%s] in trusted policy", name, presetNames(all), name)
	}
	p := all[i]
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

// takesPrompt reports whether the preset's command has a {prompt}: the
// agent gets its prompt there, not on its standard input.
func (p *namedPreset) takesPrompt() bool { return hasPromptVar(p.Command) }

func hasPromptVar(argv []string) bool {
	return slices.ContainsFunc(argv, func(arg string) bool { return strings.Contains(arg, promptVar) })
}

// withPrompt is a preset's command with the prompt put in.
func withPrompt(argv []string, prompt string) []string {
	out := make([]string, len(argv))
	for i, arg := range argv {
		out[i] = strings.ReplaceAll(arg, promptVar, prompt)
	}
	return out
}

// promptInCommand reports whether the lease's agent gets its prompt in its
// command (its preset's {prompt}) rather than on its standard input.
func (x *Execution) promptInCommand() bool {
	return x.Lease.AgentPreset != "" && hasPromptVar(x.Lease.Command)
}

// env is the preset's fixed environment, sorted.
func (p *namedPreset) env() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		out = append(out, k+"="+p.Env[k])
	}
	return out
}
