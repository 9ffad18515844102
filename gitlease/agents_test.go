package gitlease

import (
	"strings"
	"testing"
)

// TestSandboxPresetGetsItsPromptInItsCommandOnly runs a preset whose
// command says {prompt}: the agent finds the prompt there, its standard
// input is empty (many agents append it to the prompt), the record keeps
// the command with {prompt} and names the preset, and the preset's
// environment reaches the agent.
func TestSandboxPresetGetsItsPromptInItsCommandOnly(t *testing.T) {
	policy := "[agents.echoer]\ncommand = [\"bash\", \"-c\", \"echo \\\"arg=$0\\\"; echo \\\"stdin=$(cat)\\\"; echo \\\"mode=$ECHOER_MODE\\\"\", \"{prompt}\"]\nenv = { ECHOER_MODE = \"quiet\" }\n"
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, policy)
	x, out := runLease(t, repo, StartOptions{Agent: "echoer", Prompt: "fix the bug"}, "")
	if !strings.Contains(out, "arg=fix the bug\nstdin=\nmode=quiet\n") {
		t.Fatalf("the agent saw:\n%s", out)
	}
	if x.Lease.AgentPreset != "echoer" || x.Lease.Command[3] != "{prompt}" || x.Lease.Prompt == nil {
		t.Fatalf("record: preset %q, command %q, prompt %+v", x.Lease.AgentPreset, x.Lease.Command, x.Lease.Prompt)
	}
}
