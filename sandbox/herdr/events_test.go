package herdr

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// pushed waits for what w's stream pushes next and notes it; it fails the
// test when nothing arrives in 20 s (the stand-in pushes at once).
func pushed(t *testing.T, w *sandbox.EndpointWatch, what string) (ok bool) {
	t.Helper()
	select {
	case _, ok = <-w.Pushed():
		w.Note(ok)
		return ok
	case <-time.After(20 * time.Second):
		t.Fatalf("nothing was pushed after %s", what)
		return false
	}
}

// since counts the requests for method after the last request for after.
func (s *standin) since(t *testing.T, after, method string) int {
	t.Helper()
	all := s.methods(t)
	n := 0
	for i := len(all) - 1; i >= 0 && all[i] != after; i-- {
		if all[i] == method {
			n++
		}
	}
	return n
}

// TestWatchPushesPaneExitAndStatus: against a Herdr that streams events,
// the watch asks Alive once, then only when Herdr pushed something: the
// agent's reported state changing, the pane's process exiting. Neither is
// found by polling: no pane.get is sent between the first check and the
// push.
func TestWatchPushesPaneExitAndStatus(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	sup := &Supervisor{Client: s.Client, AgentKind: "git-lease", RunDir: t.TempDir()}
	e, err := sup.Start(ctx, "0123456789ab", []string{"sh", "-c", "read line"}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := sandbox.WatchEndpoint(ctx, sup, e)
	if w.Polling() {
		t.Fatal("the watch polls a Herdr that streams events")
	}
	if !w.Due() {
		t.Fatal("the first Due must ask Alive")
	}
	if alive, err := sup.Alive(ctx, e); !alive || err != nil {
		t.Fatalf("Alive = %v, %v", alive, err)
	}
	if w.Due() {
		t.Fatal("Due with nothing pushed")
	}

	if err := sup.Report(ctx, e, sandbox.StateBlocked, "ok?"); err != nil {
		t.Fatal(err)
	}
	pushed(t, w, "the agent was reported blocked")
	if !w.Due() || w.Due() {
		t.Fatal("a pushed status change must make Due true, once")
	}

	if err := s.SendInput(ctx, e.PaneID, "bye"); err != nil {
		t.Fatal(err)
	}
	if !pushed(t, w, "the pane's process exited") {
		t.Fatal("the stream ended instead of pushing the exit")
	}
	if n := s.since(t, "events.subscribe", "pane.get"); n != 1 {
		t.Fatalf("%d pane.get requests after subscribing, want only the first check: the exit was polled for, not pushed", n)
	}
	if !w.Due() {
		t.Fatal("a pushed exit must make Due true")
	}
	if alive, err := sup.Alive(ctx, e); alive || err != nil {
		t.Fatalf("Alive after the pane's process exited = %v, %v", alive, err)
	}
}

// TestWatchPollsWithoutEvents: a Herdr that does not know events.subscribe
// answers invalid_request; the watch then polls, asking Alive every time.
func TestWatchPollsWithoutEvents(t *testing.T) {
	s := startStandin(t, "-events=false")
	ctx := t.Context()
	sup := &Supervisor{Client: s.Client, AgentKind: "git-lease", RunDir: t.TempDir()}
	e, err := sup.Start(ctx, "0123456789ab", []string{"sh", "-c", "read line"}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Subscribe(ctx, e.PaneID); !errors.Is(err, ErrNoEvents) {
		t.Fatalf("Subscribe to a server without events = %v, want ErrNoEvents", err)
	}
	w := sandbox.WatchEndpoint(ctx, sup, e)
	if !w.Polling() || w.Pushed() != nil {
		t.Fatal("the watch does not poll a Herdr without events")
	}
	for i := 0; i < 3; i++ {
		if !w.Due() {
			t.Fatal("a polling watch must ask Alive every time")
		}
	}
	if _, err := s.Subscribe(ctx, "w9:p9"); !errors.Is(err, ErrNoEvents) {
		t.Fatalf("Subscribe = %v", err)
	}
}

// TestWatchOutlivesAHandoffAndARestart: both replace Herdr's server, which
// ends the stream without a word. The watch subscribes again and asks
// Alive at once: a handed-off runner is alive, a restarted one gone. A
// subscription to a pane that is gone fails with ErrPaneNotFound.
func TestWatchOutlivesAHandoffAndARestart(t *testing.T) {
	s := startStandin(t)
	ctx := t.Context()
	sup := &Supervisor{Client: s.Client, AgentKind: "git-lease", RunDir: t.TempDir()}
	e, pid := startRunner(t, sup, "a1b2c3d4e5f6")
	w := sandbox.WatchEndpoint(ctx, sup, e)
	w.Due()
	for _, c := range []struct {
		control string
		alive   bool
	}{{"standin.handoff", true}, {"standin.restart", false}} {
		s.raw(t, c.control, struct{}{})
		if pushed(t, w, c.control) {
			t.Fatalf("%s: the stream went on", c.control)
		}
		if w.Polling() {
			t.Fatalf("%s: the watch did not subscribe again", c.control)
		}
		if !w.Due() {
			t.Fatalf("%s: a lost stream must make Due true", c.control)
		}
		if !c.alive {
			eventually(t, "the runner dies with the restart", func() bool {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				return len(b) == 0 || strings.Contains(string(b), ") Z")
			})
		}
		if alive, err := sup.Alive(ctx, e); alive != c.alive || err != nil {
			t.Fatalf("%s: Alive = %v, %v; want %v", c.control, alive, err, c.alive)
		}
	}
	if n := strings.Count(strings.Join(s.methods(t), "\n"), "events.subscribe"); n != 3 {
		t.Errorf("%d subscriptions, want the first and one after each lost stream", n)
	}
	if err := sup.Close(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Subscribe(ctx, e.PaneID); !errors.Is(err, ErrPaneNotFound) {
		t.Fatalf("Subscribe to a closed pane = %v, want ErrPaneNotFound", err)
	}
	// Ending ctx ends a stream.
	ctx, cancel := context.WithCancel(ctx)
	events, err := s.Subscribe(ctx, runPane(t, s.Client, "other", "sh", "-c", "read line").PaneID)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range events {
	}
}
