package herdr

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPingAcceptsNewerHerdr(t *testing.T) {
	s := startStandin(t)
	srv, err := s.Ping(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if srv.Version != MinVersion || !srv.Capabilities.LiveHandoff {
		t.Errorf("Ping = %+v, want version %s with live handoff", srv, MinVersion)
	}

	// A later Herdr bumps its terminal wire protocol; the JSON API answers
	// as before, so git-lease works with it.
	newer := startStandin(t, "-protocol", "23", "-version", "0.9.1", "-live-handoff=false")
	srv, err = newer.Ping(t.Context())
	if err != nil {
		t.Fatalf("Ping against herdr 0.9.1 (protocol 23) = %v, want it accepted", err)
	}
	if srv.Protocol != 23 || srv.Capabilities.LiveHandoff {
		t.Errorf("Ping = %+v, want protocol 23 without live handoff", srv)
	}
	runPane(t, newer.Client, "lease:1234aaaaaaaa", "cat")

	for _, v := range []string{"0.8.1", "0.7.9", "", "latest"} {
		old := startStandin(t, "-version", v)
		if _, err := old.Ping(t.Context()); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), MinVersion) {
			t.Errorf("Ping against version %q = %v, want ErrVersion naming %s", v, err, MinVersion)
		}
	}
}

func TestPingFailsClosedWithoutServer(t *testing.T) {
	c := &Client{Socket: filepath.Join(t.TempDir(), "herdr.sock")}
	_, err := c.Ping(t.Context())
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "is herdr running?") || !strings.Contains(err.Error(), c.Socket) {
		t.Errorf("Ping = %v, want ErrUnreachable asking whether herdr runs at the socket", err)
	}
}

func TestPaneLifecycle(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const label = "lease:3f9c0a1b2d4e"
	ws, err := s.CreateWorkspace(ctx, WorkspaceSpec{Label: label, Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Run(ctx, RunSpec{
		ReplaceTabID: ws.TabID,
		Label:        label,
		Cwd:          dir,
		Env:          map[string]string{"GREETING": "hello"},
		Argv:         []string{"sh", "-c", `echo "$GREETING from $HERDR_PANE_ID in $(pwd)"; exec cat`},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Label != label || !strings.HasPrefix(p.TerminalID, "term_") || !strings.HasPrefix(p.PaneID, ws.WorkspaceID+":") {
		t.Fatalf("Run = %+v, want a labelled pane in %s", p, ws.WorkspaceID)
	}
	readUntil(t, s.Client, p.PaneID, "hello from "+p.PaneID+" in "+dir)
	if found, err := s.Find(ctx, label); err != nil || len(found) != 1 || found[0].PaneID != p.PaneID {
		t.Fatalf("Find = %v, %v; want only %s (the shell tab was replaced)", found, err, p.PaneID)
	}
	if _, err := s.Run(ctx, RunSpec{WorkspaceID: ws.WorkspaceID, Label: label, Argv: []string{"true"}}); !errors.Is(err, ErrLabelTaken) {
		t.Errorf("a second Run with the label = %v, want ErrLabelTaken", err)
	}

	if err := s.SendInput(ctx, p.PaneID, "typed into the pane"); err != nil {
		t.Fatal(err)
	}
	readUntil(t, s.Client, p.PaneID, "typed into the pane")

	for _, state := range []Status{StatusWorking, StatusBlocked} {
		if err := s.ReportAgent(ctx, p.PaneID, "codex", state, ""); err != nil {
			t.Fatal(err)
		}
		if info, err := s.Get(ctx, p.PaneID); err != nil || info.AgentStatus != state || info.Agent != "codex" {
			t.Fatalf("after reporting %s: Get = %+v, %v", state, info, err)
		}
	}
	if err := s.ReportAgent(ctx, p.PaneID, "codex", StatusDone, ""); err == nil {
		t.Error("reporting done succeeded; herdr refuses it")
	}
	if err := s.ReportAgent(ctx, p.PaneID, "codex", StatusIdle, "finished"); err != nil {
		t.Fatal(err)
	}
	info, err := s.Get(ctx, p.PaneID)
	if err != nil || info.AgentStatus != StatusDone || !info.AgentStatus.Finished() {
		t.Fatalf("idle after blocked: Get = %+v, %v; want done", info, err)
	}
	if got, err := s.Wait(ctx, p, time.Second, StatusDone); err != nil || got.AgentStatus != StatusDone {
		t.Fatalf("Wait = %+v, %v", got, err)
	}

	if alive, err := s.Check(ctx, p); !alive || err != nil {
		t.Fatalf("Check = %v, %v; want alive", alive, err)
	}
	if err := s.Close(ctx, p); err != nil {
		t.Fatal(err)
	}
	if alive, err := s.Check(ctx, p); alive || err != nil {
		t.Errorf("Check after Close = %v, %v; want gone", alive, err)
	}
	if _, err := s.Get(ctx, p.PaneID); !errors.Is(err, ErrPaneNotFound) {
		t.Errorf("Get after Close = %v, want ErrPaneNotFound", err)
	}
	if err := s.Close(ctx, p); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

func TestTwoPanesAtOnce(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	ws, err := s.CreateWorkspace(ctx, WorkspaceSpec{Label: "lease:aaaa00000000"})
	if err != nil {
		t.Fatal(err)
	}
	labels := []string{"lease:aaaa11111111", "lease:aaaa22222222"}
	panes := make([]Pane, len(labels))
	errs := make(chan error, len(labels))
	for i, label := range labels {
		go func() {
			var err error
			panes[i], err = s.Run(ctx, RunSpec{WorkspaceID: ws.WorkspaceID, Label: label,
				Argv: []string{"sh", "-c", "echo I am " + label + "; exec cat"}})
			errs <- err
		}()
	}
	for range labels {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	a, b := panes[0], panes[1]
	if a.PaneID == b.PaneID || a.TerminalID == b.TerminalID {
		t.Fatalf("two Runs share an identity: %+v %+v", a, b)
	}
	for i, p := range panes {
		text := readUntil(t, s.Client, p.PaneID, "I am "+labels[i])
		if strings.Contains(text, labels[1-i]) {
			t.Errorf("pane %s shows the other pane's output: %q", p.PaneID, text)
		}
	}
	if err := s.ReportAgent(ctx, a.PaneID, "claude", StatusWorking, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.ReportAgent(ctx, b.PaneID, "claude", StatusBlocked, ""); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[Pane]Status{a: StatusWorking, b: StatusBlocked} {
		if info, err := s.Get(ctx, p.PaneID); err != nil || info.AgentStatus != want {
			t.Errorf("Get(%s) = %+v, %v; want %s", p.PaneID, info, err, want)
		}
	}
}

func TestWait(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	p := runPane(t, s.Client, "lease:bbbb00000000", "cat")

	if _, err := s.Wait(ctx, p, time.Second); !errors.Is(err, ErrAgentNotFound) {
		t.Errorf("Wait before any report = %v, want ErrAgentNotFound", err)
	}
	if err := s.ReportAgent(ctx, p.PaneID, "codex", StatusWorking, ""); err != nil {
		t.Fatal(err)
	}
	w := waitInBackground(t, s, p)
	if err := s.ReportAgent(ctx, p.PaneID, "codex", StatusIdle, ""); err != nil {
		t.Fatal(err)
	}
	r := <-w
	got, err := r.info, r.err
	if err != nil || got.AgentStatus != StatusDone || got.TerminalID != p.TerminalID {
		t.Fatalf("Wait = %+v, %v; want done in %s", got, err, p.TerminalID)
	}
	if _, err := s.Wait(ctx, p, 100*time.Millisecond, StatusBlocked); !errors.Is(err, ErrWaitTimeout) {
		t.Errorf("Wait for blocked = %v, want ErrWaitTimeout", err)
	}
	if err := s.ReportAgent(ctx, p.PaneID, "codex", StatusWorking, ""); err != nil {
		t.Fatal(err)
	}
	w = waitInBackground(t, s, p)
	if err := s.Close(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := (<-w).err; !errors.Is(err, ErrAgentNotRunning) {
		t.Errorf("Wait across Close = %v, want ErrAgentNotRunning", err)
	}
}

type waited struct {
	info AgentInfo
	err  error
}

// waitInBackground calls Wait for p in another goroutine and returns once
// the stand-in has received it (its request log says so), so that what the
// test does next happens while Wait waits.
func waitInBackground(t *testing.T, s *standin, p Pane) <-chan waited {
	t.Helper()
	before := s.count(t, "agent.wait")
	w := make(chan waited, 1)
	go func() {
		info, err := s.Wait(t.Context(), p, 20*time.Second)
		w <- waited{info, err}
	}()
	eventually(t, "Wait to reach the stand-in", func() bool { return s.count(t, "agent.wait") > before })
	return w
}

func TestShellPaneSplitAndInterrupt(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	ws, err := s.CreateWorkspace(ctx, WorkspaceSpec{Label: "lease:cccc00000000", Env: map[string]string{"WS_VAR": "from-env"}})
	if err != nil {
		t.Fatal(err)
	}
	root := ws.Root.PaneID
	if err := s.SendInput(ctx, root, "echo $WS_VAR; sleep 10; echo not interrupted"); err != nil {
		t.Fatal(err)
	}
	readUntil(t, s.Client, root, "from-env")
	if err := s.Interrupt(ctx, root); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the interrupted shell takes a new line", func() bool {
		if err := s.SendInput(ctx, root, "echo after"); err != nil {
			t.Fatal(err)
		}
		text, err := s.Read(ctx, root, 0)
		return err == nil && strings.Contains(text, "after")
	})
	if text, _ := s.Read(ctx, root, 0); strings.Contains(text, "not interrupted") {
		t.Errorf("ctrl+c did not stop the command: %q", text)
	}

	split, err := s.Split(ctx, SplitSpec{TargetPaneID: root, Direction: "right"})
	if err != nil {
		t.Fatal(err)
	}
	if split.WorkspaceID != ws.WorkspaceID || split.PaneID == root || split.TerminalID == ws.Root.TerminalID {
		t.Errorf("Split = %+v, want a new pane in %s", split, ws.WorkspaceID)
	}
	if _, err := s.Split(ctx, SplitSpec{TargetPaneID: "w99:p1", Direction: "down"}); !errors.Is(err, ErrPaneNotFound) {
		t.Errorf("Split of a missing pane = %v, want ErrPaneNotFound", err)
	}
}

func TestRestartMeansTheProcessIsGone(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	p := runPane(t, s.Client, "lease:dddd00000000", "cat")
	other := runPane(t, s.Client, "lease:dddd11111111", "cat")

	s.raw(t, "standin.restart", struct{}{})
	if alive, err := s.Check(ctx, p); alive || err != nil {
		t.Fatalf("Check after a restart = %v, %v; want gone", alive, err)
	}
	info, err := s.Get(ctx, p.PaneID)
	if err != nil || info.TerminalID == p.TerminalID || info.Label != p.Label {
		t.Fatalf("Get after a restart = %+v, %v; want the same labelled pane with a new terminal", info, err)
	}
	stranger := Pane{PaneID: other.PaneID, TerminalID: "term_old", Label: "lease:ffff00000000"}
	if err := s.Close(ctx, stranger); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, other.PaneID); err != nil {
		t.Errorf("Close of a pane that is not ours removed it: %v", err)
	}
	if err := s.Close(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, p.PaneID); err != nil {
		t.Errorf("Close closed a pane by its label alone: %v", err)
	}
	if err := s.CloseRelabeled(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, p.PaneID); !errors.Is(err, ErrPaneNotFound) {
		t.Errorf("our restored pane was not closed: %v", err)
	}
}

func TestPaneGoesWhenItsCommandExits(t *testing.T) {
	s := startStandin(t)
	p := runPane(t, s.Client, "lease:eeee00000000", "sh", "-c", "read line; echo bye")
	if err := s.SendInput(t.Context(), p.PaneID, "go"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pane is gone", func() bool {
		alive, err := s.Check(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		return !alive
	})
}
