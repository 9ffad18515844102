package herdr

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/process"
)

// startRunner starts a stand-in runner for lease id under sup: a pane
// whose process records its PID and start time in sup.RunDir/runner.json,
// as git-lease's runner does, then waits on its input.
func startRunner(t *testing.T, sup *Supervisor, id string) (sandbox.Endpoint, int) {
	t.Helper()
	pidFile := filepath.Join(sup.RunDir, "pid")
	e, err := sup.Start(t.Context(), id, []string{"sh", "-c", `echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec cat`, pidFile}, sup.RunDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	eventually(t, "the runner records its PID", func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	st, err := process.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(process.Record{PID: pid, StartTime: st})
	if err := os.WriteFile(filepath.Join(sup.RunDir, "runner.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return e, pid
}

// TestLiveHandoffKeepsTheRunner: herdr update --handoff gives the pane a
// new terminal ID while its process runs on; the lease's runner is
// reconnected, not gone, and cleanup still closes its pane.
func TestLiveHandoffKeepsTheRunner(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	sup := &Supervisor{Client: s.Client, AgentKind: "git-lease", RunDir: t.TempDir()}
	e, pid := startRunner(t, sup, "a1b2c3d4e5f6")
	other := &Supervisor{Client: s.Client, AgentKind: "git-lease", RunDir: t.TempDir()}
	oe, opid := startRunner(t, other, "f6e5d4c3b2a1")

	s.raw(t, "standin.handoff", struct{}{})
	info, err := s.Get(ctx, e.PaneID)
	if err != nil || info.TerminalID == e.TerminalID || info.Label != e.Label {
		t.Fatalf("after a handoff: %+v, %v; want the same labelled pane with a new terminal", info, err)
	}
	if alive, err := sup.Alive(ctx, e); !alive || err != nil {
		t.Fatalf("Alive after a live handoff = %v, %v; want the runner reconnected", alive, err)
	}
	if again, err := sup.Reconnected(ctx, e); !again || err != nil {
		t.Errorf("Reconnected after a live handoff = %v, %v", again, err)
	}
	if err := sup.Report(ctx, e, sandbox.StateWorking, ""); err != nil {
		t.Errorf("Report after a handoff: %v", err)
	}

	// The same pane ID and label, but the runner record names a process
	// that is not running: not this lease's live runner.
	stale := *sup
	stale.RunDir = t.TempDir()
	os.WriteFile(filepath.Join(stale.RunDir, "runner.json"), []byte(`{"pid":`+strconv.Itoa(pid)+`,"start_time":1}`), 0o600)
	if alive, _ := stale.Alive(ctx, e); alive {
		t.Errorf("a pane whose recorded runner is not running counts as alive")
	}
	// No record of the runner at all: the label alone closes nothing.
	blind := *sup
	blind.RunDir = t.TempDir()
	if alive, _ := blind.Alive(ctx, e); alive {
		t.Errorf("a pane with only its label to go by counts as alive")
	}
	if err := blind.Close(ctx, e); err == nil || !strings.Contains(err.Error(), "by hand") {
		t.Errorf("Close on the label alone = %v, want a refusal", err)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatal("the runner died")
	}

	if err := sup.Close(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, e.PaneID); err == nil {
		t.Errorf("cleanup did not close the handed-off pane")
	}
	eventually(t, "the runner ends with its pane", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return len(b) == 0 || strings.Contains(string(b), ") Z")
	})
	if alive, err := other.Alive(ctx, oe); !alive || err != nil {
		t.Errorf("closing one lease's pane touched another's: %v, %v", alive, err)
	}
	if syscall.Kill(opid, 0) != nil {
		t.Errorf("the other lease's runner died")
	}
}

// TestRestartIsNotAHandoff: a restart also gives new terminal IDs, but kills
// the runner; the lease's runner is gone, and cleanup closes the shell that
// Herdr left under its label.
func TestRestartIsNotAHandoff(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	sup := &Supervisor{Client: s.Client, AgentKind: "git-lease", RunDir: t.TempDir()}
	e, pid := startRunner(t, sup, "0a0b0c0d0e0f")
	s.raw(t, "standin.restart", struct{}{})
	eventually(t, "the runner dies with the restart", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return len(b) == 0 || strings.Contains(string(b), ") Z")
	})
	if alive, err := sup.Alive(ctx, e); alive || err != nil {
		t.Fatalf("Alive after a restart = %v, %v; want gone", alive, err)
	}
	if err := sup.Close(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, e.PaneID); err == nil {
		t.Errorf("cleanup left the restarted pane")
	}
}
