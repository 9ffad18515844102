package herdr

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/process"
)

// Supervisor runs a lease's runner in a Herdr pane: a new workspace
// labelled lease:<id>, created without focus, whose pane runs the runner
// directly. AgentKind is what the runner reports itself as. RunDir is the
// lease's run directory, where the runner records its PID and start time
// (runner.json): the evidence that tells a live handoff from a restart.
type Supervisor struct {
	Client    *Client
	AgentKind string
	RunDir    string
}

// NewSupervisor finds Herdr's socket as Herdr does (session, then
// HERDR_SOCKET_PATH, HERDR_SESSION, the default). runDir is the lease's
// run directory (see Supervisor).
func NewSupervisor(session, agentKind, runDir string) (*Supervisor, error) {
	socket, err := Locate(session)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	if agentKind == "" {
		agentKind = "git-lease"
	}
	return &Supervisor{Client: &Client{Socket: socket}, AgentKind: agentKind, RunDir: runDir}, nil
}

// Name is "herdr".
func (*Supervisor) Name() string { return "herdr" }

// AsAgent is a copy of s that reports the pane's agent as kind.
func (s *Supervisor) AsAgent(kind string) sandbox.Supervisor {
	if kind == "" {
		return s
	}
	c := *s
	c.AgentKind = kind
	return &c
}

// Check pings the server and checks its version; it fails closed.
func (s *Supervisor) Check(ctx context.Context) error {
	if _, err := s.Client.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	return nil
}

func pane(e sandbox.Endpoint) Pane {
	return Pane{PaneID: e.PaneID, TerminalID: e.TerminalID, Label: e.Label}
}

// Start opens a workspace labelled lease:<id> without focus and runs argv
// in its pane. The pane, its terminal and its label are the endpoint.
func (s *Supervisor) Start(ctx context.Context, id string, argv []string, dir string, env []string) (sandbox.Endpoint, error) {
	label := "lease:" + id
	vars := map[string]string{}
	for _, kv := range env {
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				vars[kv[:i]] = kv[i+1:]
				break
			}
		}
	}
	ws, err := s.Client.CreateWorkspace(ctx, WorkspaceSpec{Label: label, Cwd: dir})
	if err != nil {
		return sandbox.Endpoint{}, err
	}
	p, err := s.Client.Run(ctx, RunSpec{ReplaceTabID: ws.TabID, Label: label, Cwd: dir, Env: vars, Argv: argv})
	if err != nil {
		return sandbox.Endpoint{}, err
	}
	return sandbox.Endpoint{Supervisor: "herdr", PaneID: p.PaneID, TerminalID: p.TerminalID, Label: p.Label}, nil
}

// paneState is what became of a lease's pane.
type paneState int

const (
	paneGone     paneState = iota // no pane under the ID
	paneSame                      // the pane still shows the recorded terminal
	paneHandoff                   // new terminal, same label, the runner lives: a live handoff
	paneLeftover                  // new terminal, same label, the runner is dead: a restart's shell
	paneUnknown                   // new terminal, same label, no record of the runner to tell
	paneOther                     // the ID names someone else's pane
)

// identify tells what the pane under e's ID is now. A live handoff (herdr
// update --handoff) keeps pane processes but gives every pane a new
// terminal ID under its pane ID and label; a restart also gives new
// terminal IDs, but kills the processes. The label alone cannot tell them
// apart, so a changed terminal counts as this lease's pane only with the
// label and the runner's recorded PID and start time: alive is a handoff,
// dead a restart's leftover.
func (s *Supervisor) identify(ctx context.Context, e sandbox.Endpoint) (paneState, error) {
	info, err := s.Client.Get(ctx, e.PaneID)
	switch {
	case errors.Is(err, ErrPaneNotFound):
		return paneGone, nil
	case err != nil:
		return paneGone, err
	case info.TerminalID == e.TerminalID:
		return paneSame, nil
	case e.Label == "" || info.Label != e.Label:
		return paneOther, nil
	}
	if s.RunDir == "" {
		return paneUnknown, nil
	}
	switch _, ok, alive := process.Runner(s.RunDir); {
	case !ok:
		return paneUnknown, nil
	case alive:
		return paneHandoff, nil
	}
	return paneLeftover, nil
}

// Alive reports whether the pane still runs the runner git-lease started:
// it shows the recorded terminal, or (after a live handoff) a new terminal
// with the same pane ID and label while the recorded runner process lives.
func (s *Supervisor) Alive(ctx context.Context, e sandbox.Endpoint) (bool, error) {
	st, err := s.identify(ctx, e)
	return st == paneSame || st == paneHandoff, err
}

// Reconnected reports whether the pane was handed over to a new terminal
// (a live handoff) while the runner kept running.
func (s *Supervisor) Reconnected(ctx context.Context, e sandbox.Endpoint) (bool, error) {
	st, err := s.identify(ctx, e)
	return st == paneHandoff, err
}

// Report tells Herdr the agent's state. Herdr takes idle for a finished
// turn (it shows done itself until someone looks).
func (s *Supervisor) Report(ctx context.Context, e sandbox.Endpoint, state, message string) error {
	st := Status(state)
	if state == sandbox.StateDone {
		st = StatusIdle
	}
	return s.Client.ReportAgent(ctx, e.PaneID, s.AgentKind, st, message)
}

// Interrupt sends Ctrl-C to the pane: the runner turns it into a graceful
// cancel.
func (s *Supervisor) Interrupt(ctx context.Context, e sandbox.Endpoint) error {
	return s.Client.Interrupt(ctx, e.PaneID)
}

// Close closes the lease's pane and confirms it is gone: the pane with the
// recorded terminal, or one that carries the lease's label under the
// recorded pane ID with a new terminal when the runner's record says whose
// it is (its runner alive after a live handoff, or dead after a restart).
// A label with no record of the runner to back it is not enough: the pane
// is left and Close fails, saying so. Someone else's pane under the ID is
// left alone.
func (s *Supervisor) Close(ctx context.Context, e sandbox.Endpoint) error {
	st, err := s.identify(ctx, e)
	if err != nil {
		return err
	}
	switch st {
	case paneGone, paneOther:
		return nil
	case paneUnknown:
		return fmt.Errorf("herdr pane %s carries the lease's label with another terminal, and nothing records the lease's runner: close it by hand if it is the lease's", e.PaneID)
	case paneSame:
		err = s.Client.Close(ctx, pane(e))
	default:
		err = s.Client.CloseRelabeled(ctx, pane(e))
	}
	if err != nil {
		return err
	}
	info, err := s.Client.Get(ctx, e.PaneID)
	if errors.Is(err, ErrPaneNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.TerminalID == e.TerminalID || info.Label == e.Label {
		return fmt.Errorf("herdr pane %s is still there after pane.close", e.PaneID)
	}
	return nil
}

// Attach brings the lease's pane forward: the only focus call git-lease
// makes, when the user runs git lease attach.
func (s *Supervisor) Attach(ctx context.Context, e sandbox.Endpoint) error {
	if alive, err := s.Alive(ctx, e); err != nil || !alive {
		return fmt.Errorf("the lease's herdr pane %s is gone", e.PaneID)
	}
	return s.Client.Attach(ctx, e.PaneID)
}
