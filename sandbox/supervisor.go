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
