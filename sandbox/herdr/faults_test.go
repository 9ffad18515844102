package herdr

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDroppedReadIsRetriedOnce(t *testing.T) {
	s := startStandin(t)
	p := runPane(t, s.Client, "lease:1111aaaaaaaa", "cat")
	s.set(t, 1, 0)
	info, err := s.Get(t.Context(), p.PaneID)
	if err != nil || info.TerminalID != p.TerminalID {
		t.Fatalf("Get across a dropped connection = %+v, %v", info, err)
	}
	if n := s.count(t, "pane.get"); n != 2 {
		t.Errorf("pane.get was sent %d times, want 2", n)
	}
}

func TestDroppedRunIsFoundByLabel(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	ws, err := s.CreateWorkspace(ctx, WorkspaceSpec{Label: "lease:2222aaaaaaaa"})
	if err != nil {
		t.Fatal(err)
	}
	s.set(t, 2, 0) // Run's label check is the first request, layout.apply the second
	p, err := s.Run(ctx, RunSpec{WorkspaceID: ws.WorkspaceID, Label: "lease:2222bbbbbbbb", Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.count(t, "layout.apply"); n != 1 {
		t.Errorf("layout.apply was sent %d times, want 1", n)
	}
	if alive, err := s.Check(ctx, p); !alive || err != nil {
		t.Errorf("the pane found by label: Check = %v, %v", alive, err)
	}
}

func TestDroppedCreateWorkspaceIsFoundByLabel(t *testing.T) {
	s := startStandin(t)
	s.set(t, 2, 0) // the label check, then workspace.create
	ws, err := s.CreateWorkspace(t.Context(), WorkspaceSpec{Label: "lease:3333aaaaaaaa"})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.count(t, "workspace.create"); n != 1 {
		t.Errorf("workspace.create was sent %d times, want 1", n)
	}
	if ws.WorkspaceID == "" || ws.TabID == "" || ws.Root.TabID != ws.TabID {
		t.Errorf("recovered workspace = %+v", ws)
	}
}

func TestDroppedSplitIsNotRetried(t *testing.T) {
	s := startStandin(t)
	ws, err := s.CreateWorkspace(t.Context(), WorkspaceSpec{Label: "lease:4444aaaaaaaa"})
	if err != nil {
		t.Fatal(err)
	}
	s.set(t, 1, 0)
	if _, err := s.Split(t.Context(), SplitSpec{TargetPaneID: ws.Root.PaneID, Direction: "down"}); !errors.Is(err, ErrNoAnswer) {
		t.Errorf("Split across a dropped connection = %v, want ErrNoAnswer", err)
	}
	if n := s.count(t, "pane.split"); n != 1 {
		t.Errorf("pane.split was sent %d times, want 1", n)
	}
}

func TestLostCreateReportsWhatItFinds(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	const label = "lease:5555aaaaaaaa"
	lost := ErrNoAnswer
	if _, err := s.lostPane(ctx, label, lost); !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "may still appear") {
		t.Errorf("nothing labelled: %v, want ErrNoAnswer saying it may still appear", err)
	}
	ws, err := s.CreateWorkspace(ctx, WorkspaceSpec{Label: label})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // two panes with one label, as two racing creates would leave
		reply := s.raw(t, "layout.apply", map[string]any{"workspace_id": ws.WorkspaceID, "focus": false,
			"root": map[string]any{"type": "pane", "label": label, "command": []string{"cat"}}})
		if reply["error"] != nil {
			t.Fatal(reply["error"])
		}
	}
	if _, err := s.lostPane(ctx, label, lost); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("two panes labelled: %v, want ErrAmbiguous", err)
	}
}

func TestSlowServerHitsTheDeadline(t *testing.T) {
	s := startStandin(t)
	s.set(t, 0, 2*time.Second)
	c := &Client{Socket: s.Socket, Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := c.Ping(t.Context())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer in time") {
		t.Errorf("Ping of a slow server = %v, want a deadline error", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("Ping took %v despite a 200ms timeout", elapsed)
	}
}

func TestFocusMethodsAreNeverSent(t *testing.T) {
	s := startStandin(t)
	for _, m := range []string{"pane.focus", "workspace.focus", "agent.focus", "pane.focus_direction"} {
		if err := s.call(t.Context(), m, map[string]string{"pane_id": "w1:p1"}, nil); !errors.Is(err, ErrFocus) {
			t.Errorf("call(%s) = %v, want ErrFocus", m, err)
		}
	}
	if err := s.call(t.Context(), "server.stop", struct{}{}, nil); err == nil {
		t.Error("a method outside the client's list was sent")
	}
	if got := s.methods(t); len(got) != 0 {
		t.Errorf("requests reached the server: %v", got)
	}
}

func TestOversizedRequestIsNotSent(t *testing.T) {
	s := startStandin(t)
	err := s.SendInput(t.Context(), "w1:p1", strings.Repeat("x", maxRequest))
	if err == nil || !strings.Contains(err.Error(), "at most 1 MiB") {
		t.Errorf("SendInput of 1 MiB = %v, want a size error", err)
	}
	if n := s.count(t, "pane.send_input"); n != 0 {
		t.Errorf("the oversized request was sent")
	}
}

// TestReportsCarryARisingSeq checks that every pane.report_agent carries a
// seq above the last, so Herdr drops a report that arrives late.
func TestReportsCarryARisingSeq(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "herdr.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seqs := make(chan *uint64, 3)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			var req struct {
				ID     string `json:"id"`
				Params struct {
					Seq *uint64 `json:"seq"`
				} `json:"params"`
			}
			line, _ := bufio.NewReader(conn).ReadBytes('\n')
			json.Unmarshal(line, &req)
			seqs <- req.Params.Seq
			fmt.Fprintf(conn, `{"id":%q,"result":{"type":"ok"}}`+"\n", req.ID)
			conn.Close()
		}
	}()
	c := &Client{Socket: socket}
	var last uint64
	for i, st := range []Status{StatusWorking, StatusBlocked, StatusIdle} {
		if err := c.ReportAgent(t.Context(), "w1:p1", "git-lease", st, ""); err != nil {
			t.Fatal(err)
		}
		seq := <-seqs
		if seq == nil || *seq <= last {
			t.Fatalf("report %d carried seq %v, want a number above %d", i, seq, last)
		}
		last = *seq
	}
}
