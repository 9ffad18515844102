package gitlease

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// AgentInfo is one agent preset as git lease agents shows it.
type AgentInfo struct {
	Name   string `json:"name"`
	Source string `json:"source"` // "built-in" or "trusted policy"
	AgentPreset
	// Installed is where a sandboxed lease finds the command, or "".
	Installed string `json:"installed"`
	// Missing says why it is not installed, when it is not.
	Missing string `json:"missing,omitempty"`
}

// Agents lists the agent presets (built in, and from trusted policy), or
// those named, and whether each agent is installed where a sandboxed lease
// can run it. A name with no preset is an error.
func Agents(repo *refs.Repo, names ...string) ([]AgentInfo, error) {
	eff, err := LoadPolicy(repo, plumbing.ZeroHash)
	if err != nil {
		return nil, err
	}
	all := presets(eff.Policy)
	for _, name := range names {
		if !slices.ContainsFunc(all, func(p namedPreset) bool { return p.Name == name }) {
			return nil, fmt.Errorf("no agent preset named %q (known: %s): define [agents.%s] in trusted policy", name, presetNames(all), name)
		}
	}
	var out []AgentInfo
	for _, p := range all {
		if len(names) > 0 && !slices.Contains(names, p.Name) {
			continue
		}
		info := AgentInfo{Name: p.Name, Source: p.Source, AgentPreset: p.AgentPreset}
		if path, err := findAgent(p.Command[0], union(eff.ReadOnly, p.ReadOnly), true); err != nil {
			info.Missing = err.Error()
		} else {
			info.Installed = path
		}
		out = append(out, info)
	}
	return out, nil
}

// findAgent finds an agent's program as a lease will run it: for a
// sandboxed lease, on the sandbox's PATH and visible inside (in a system
// directory or a read-only path); otherwise on the user's PATH.
func findAgent(program string, readOnly []string, sandboxed bool) (string, error) {
	if !filepath.IsAbs(program) && strings.Contains(program, "/") {
		return program, nil // in the lease's own tree: it is there or not when the agent starts
	}
	if !sandboxed {
		path, err := exec.LookPath(program)
		if err != nil {
			return "", fmt.Errorf("agent program %s is not installed (not on your PATH)", program)
		}
		return path, nil
	}
	candidates := []string{program}
	if !strings.Contains(program, "/") {
		candidates = nil
		for _, dir := range filepath.SplitList(bwrap.AgentPATH) {
			candidates = append(candidates, filepath.Join(dir, program))
		}
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && bwrap.Visible(c, readOnly) {
			return c, nil
		}
	}
	if path, err := exec.LookPath(program); err == nil {
		return "", fmt.Errorf("agent program %s is installed at %s, which a sandboxed lease cannot see: install it system-wide (under /usr/local or /opt), or add its directory to the preset's read_only in trusted policy", program, path)
	}
	return "", fmt.Errorf("agent program %s is not installed (a sandboxed lease looks in %s and policy's read_only paths)", program, bwrap.AgentPATH)
}
