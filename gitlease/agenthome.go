package gitlease

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/sandbox"
)

// promptInCommand reports whether the lease's agent gets its prompt in its
// command (its preset's {prompt}) rather than on its standard input.
func (x *Execution) promptInCommand() bool {
	return x.Lease.AgentPreset != "" && policy.HasPromptVar(x.Lease.Command)
}

// agentHome is the sandboxed agent's home (bwrap's; a Crabbox box gets no
// host files but its prompt, so its agent finds no home files).
const agentHome = "/home/agent"

// homeBinds writes a preset's home files into the lease's run directory
// and returns their read-only binds in the sandbox's home.
func (x *Execution) homeBinds(files map[string]string) ([]sandbox.Bind, error) {
	if len(files) == 0 {
		return nil, nil
	}
	dir := filepath.Join(x.RunDir(), "home")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var binds []sandbox.Bind
	for i, rel := range slices.Sorted(maps.Keys(files)) {
		host := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(host, []byte(files[rel]), 0o600); err != nil {
			return nil, err
		}
		binds = append(binds, sandbox.Bind{Host: host, Sandbox: path.Join(agentHome, rel)})
	}
	return binds, nil
}
