package sandbox

import (
	"context"
	"errors"
)

// Endpoint is where a lease's runner lives: the process (or Herdr pane)
// that runs the sandboxed agent, reports its state and collects its result.
// It is recorded in the lease log before the agent is prompted, so any
// git-lease process can find it by execution ID. Public identifiers only.
type Endpoint struct {
	Supervisor string `json:"supervisor"` // headless or herdr
	PaneID     string `json:"pane_id,omitempty"`
	TerminalID string `json:"terminal_id,omitempty"`
	Label      string `json:"label,omitempty"`
}

// Agent states a supervisor reports, as Herdr names them.
const (
	StateWorking = "working"
	StateBlocked = "blocked"
	StateDone    = "done"
)

// Supervisor runs a lease's runner detached from the command that started
// it, and observes it.
type Supervisor interface {
	// Name is headless or herdr.
	Name() string
	// Check reports whether the supervisor can be used here (ErrUnavailable).
	Check(ctx context.Context) error
	// Start starts argv (git-lease's own runner) detached, in dir with env,
	// labelled lease:<id>, and returns its endpoint once it runs. It never
	// takes the user's focus.
	Start(ctx context.Context, id string, argv []string, dir string, env []string) (Endpoint, error)
	// Alive reports whether the endpoint's runner is still the one started.
	Alive(ctx context.Context, e Endpoint) (bool, error)
	// AsAgent is the supervisor showing the runner as the agent kind
	// (a preset's, such as "claude"); "" keeps what it shows.
	AsAgent(kind string) Supervisor
	// Report tells the supervisor the agent's state (working, blocked,
	// done) with an optional message (a blocked agent's question).
	Report(ctx context.Context, e Endpoint, state, message string) error
	// Interrupt asks the runner to cancel the lease gracefully.
	Interrupt(ctx context.Context, e Endpoint) error
	// Close removes the endpoint and confirms it is gone. Closing what is
	// already gone succeeds.
	Close(ctx context.Context, e Endpoint) error
	// Attach brings the endpoint to the user, when the user asks.
	Attach(ctx context.Context, e Endpoint) error
}

// ErrNoAttach is returned by supervisors that have nothing to bring forward.
var ErrNoAttach = errors.New("this supervisor has no pane to attach to")

// Watcher is a Supervisor that pushes what happens to an endpoint (Herdr's
// event stream), so that a waiter asks Alive when something happened
// rather than on every tick.
type Watcher interface {
	// Watch sends on the channel when the endpoint's runner may have ended
	// or its agent's reported state changed, and closes the channel when
	// the stream ends (ctx ended, or the supervisor restarted or handed
	// off). An error means nothing will be pushed: poll Alive instead.
	Watch(ctx context.Context, e Endpoint) (<-chan struct{}, error)
}

// EndpointWatch tells a waiter when to ask a supervisor whether an
// endpoint's runner is alive: on every tick when the supervisor cannot push
// changes, else only after it pushed one or its stream ended. A stream that
// ends is opened again, and the next Due asks Alive, since changes may have
// been missed in between; when it cannot be opened again the watch polls
// from then on. A lost stream thus costs a waiter one check, never a hang.
// A nil *EndpointWatch polls.
type EndpointWatch struct {
	ctx     context.Context
	watcher Watcher // nil while polling
	e       Endpoint
	pushed  <-chan struct{}
	stale   bool // something may have changed since Due last said so
}

// WatchEndpoint starts watching e under sup until ctx ends. The first Due
// is always true.
func WatchEndpoint(ctx context.Context, sup Supervisor, e Endpoint) *EndpointWatch {
	w := &EndpointWatch{ctx: ctx, e: e, stale: true}
	if watcher, ok := sup.(Watcher); ok {
		w.watcher = watcher
		w.open()
	}
	return w
}

func (w *EndpointWatch) open() {
	ch, err := w.watcher.Watch(w.ctx, w.e)
	if err != nil {
		w.watcher, w.pushed = nil, nil
		return
	}
	w.pushed = ch
}

// Pushed is the channel a waiter selects on beside its tick: it receives
// when the supervisor pushed a change (a nil channel while polling, which
// never receives). Hand what it received to Note.
func (w *EndpointWatch) Pushed() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.pushed
}

// Note records what Pushed gave: a change, or (ok false) the end of the
// stream, which it opens again.
func (w *EndpointWatch) Note(ok bool) {
	w.stale = true
	if !ok {
		w.open()
	}
}

// Polling reports whether the watch polls (it has no stream).
func (w *EndpointWatch) Polling() bool { return w == nil || w.watcher == nil }

// Due reports whether the waiter must ask Alive now: always while polling,
// else when something was pushed or the stream was opened again since Due
// last said so.
func (w *EndpointWatch) Due() bool {
	if w.Polling() {
		return true
	}
	due := w.stale
	w.stale = false
	return due
}
