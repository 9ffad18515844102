package gitlease

import (
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
)

// AgentInfo is one agent preset as git lease agents shows it.
type AgentInfo struct {
	Name   string `json:"name"`
	Source string `json:"source"` // "built-in" or "trusted policy"
	policy.AgentPreset
	// Installed is where a sandboxed lease finds the command, or "".
	Installed string `json:"installed"`
	// Missing says why it is not installed, when it is not.
	Missing string `json:"missing,omitempty"`
}

// Agents lists the agent presets (built in, and from trusted policy), or
// those named, and whether each agent is installed where a sandboxed lease
// can run it. A name with no preset is an error.
func Agents(repo *refs.Repo, names ...string) ([]AgentInfo, error) {
	eff, err := policy.Load(repo, plumbing.ZeroHash)
	if err != nil {
		return nil, err
	}
	all := policy.Presets(eff.Policy)
	for _, name := range names {
		if _, err := policy.Preset(eff.Policy, name); err != nil {
			return nil, err
		}
	}
	var out []AgentInfo
	for _, p := range all {
		if len(names) > 0 && !slices.Contains(names, p.Name) {
			continue
		}
		info := AgentInfo{Name: p.Name, Source: p.Source, AgentPreset: p.AgentPreset}
		if prog, err := findAgent(p.Command[0], slices.Concat(eff.ReadOnly, p.ReadOnly), true); err != nil {
			info.Missing = err.Error()
		} else {
			info.Installed = prog.Path
		}
		out = append(out, info)
	}
	return out, nil
}
