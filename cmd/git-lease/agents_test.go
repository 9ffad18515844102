package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/sandbox/herdr"
)

// TestHerdrShowsThePresetsAgentKind runs an agent preset in a Herdr pane
// (the stand-in): the runner reports the agent as the preset's Herdr kind,
// and the agent gets its prompt in its command.
func TestHerdrShowsThePresetsAgentKind(t *testing.T) {
	dir := faultRepo(t)
	socket, _ := herdrServer(t)
	cfg := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git-lease")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	policy := "[agents.scribe]\ncommand = [\"sh\", \"-c\", \"echo \\\"$0\\\" > said.txt\", \"{prompt}\"]\nherdr_agent = \"scribe\"\n"
	if err := os.WriteFile(filepath.Join(cfg, "policy.toml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, dir, "start", "-q", "--supervisor", "herdr", "--agent", "scribe", "--prompt", "write this down")
	l := record(t, dir, leaseID(out))
	// Cleanup stops the runner, which stays waiting on its pane: no
	// git-lease __run outlives the test.
	t.Cleanup(func() { runLease(t, dir, nil, "cleanup", leaseID(out)) })
	if l.State != gitlease.Review || l.Supervisor == nil || l.Result.Manifest[0].Path != "said.txt" {
		t.Fatalf("lease: %s %+v\n%s", l.State, l.Supervisor, out)
	}
	info, err := (&herdr.Client{Socket: socket}).Get(context.Background(), l.Supervisor.PaneID)
	if err != nil || info.Agent != "scribe" {
		t.Fatalf("Herdr shows the pane's agent as %q (%v), want the preset's kind", info.Agent, err)
	}
}
