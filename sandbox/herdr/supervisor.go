package herdr

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-lease/git-lease/sandbox"
)

// Supervisor runs a lease's runner in a Herdr pane: a new workspace
// labelled lease:<id>, created without focus, whose pane runs the runner
// directly. AgentKind is what the runner reports itself as.
type Supervisor struct {
	Client    *Client
	AgentKind string
}

// NewSupervisor finds Herdr's socket as Herdr does (session, then
// HERDR_SOCKET_PATH, HERDR_SESSION, the default).
func NewSupervisor(session, agentKind string) (*Supervisor, error) {
	socket, err := Locate(session)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	if agentKind == "" {
		agentKind = "git-lease"
	}
	return &Supervisor{Client: &Client{Socket: socket}, AgentKind: agentKind}, nil
}

// Name is "herdr".
func (*Supervisor) Name() string { return "herdr" }

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

// Alive reports whether the pane still runs the terminal it was bound to:
// a changed terminal means the runner is gone (a Herdr restart).
func (s *Supervisor) Alive(ctx context.Context, e sandbox.Endpoint) (bool, error) {
	return s.Client.Check(ctx, pane(e))
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

// Close closes the pane and confirms it is gone.
func (s *Supervisor) Close(ctx context.Context, e sandbox.Endpoint) error {
	if err := s.Client.Close(ctx, pane(e)); err != nil {
		return err
	}
	alive, err := s.Client.Check(ctx, pane(e))
	if err != nil && !errors.Is(err, ErrPaneNotFound) {
		return err
	}
	if alive {
		return fmt.Errorf("herdr pane %s is still there after pane.close", e.PaneID)
	}
	return nil
}

// Attach brings the lease's pane forward: the only focus call git-lease
// makes, when the user runs git lease attach.
func (s *Supervisor) Attach(ctx context.Context, e sandbox.Endpoint) error {
	if alive, err := s.Client.Check(ctx, pane(e)); err != nil || !alive {
		return fmt.Errorf("the lease's herdr pane %s is gone", e.PaneID)
	}
	return s.Client.Attach(ctx, e.PaneID)
}
