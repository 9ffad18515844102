package herdr

import (
	"context"
	"errors"
	"fmt"
)

// Pane is what git-lease records to find its pane again. PaneID and Label
// survive a Herdr restart and a live handoff (and pane IDs can be reused),
// but TerminalID is new after either: a restart kills the pane's process,
// a live handoff (herdr update --handoff) keeps it. A changed TerminalID
// alone therefore does not tell whether the process git-lease started
// lives; the supervisor asks the runner's recorded PID and start time.
type Pane struct {
	PaneID     string `json:"pane_id"`
	TerminalID string `json:"terminal_id"`
	Label      string `json:"label,omitempty"`
}

// PaneInfo is Herdr's view of a pane (the fields git-lease reads). Empty
// strings are fields Herdr left out.
type PaneInfo struct {
	PaneID      string `json:"pane_id"`
	TerminalID  string `json:"terminal_id"`
	WorkspaceID string `json:"workspace_id"`
	TabID       string `json:"tab_id"`
	Cwd         string `json:"cwd"`
	Label       string `json:"label"`
	Title       string `json:"title"`
	Agent       string `json:"agent"`
	AgentStatus Status `json:"agent_status"`
	Revision    uint64 `json:"revision"`
}

// Pane returns the identity to record for p.
func (p PaneInfo) Pane() Pane {
	return Pane{PaneID: p.PaneID, TerminalID: p.TerminalID, Label: p.Label}
}

// Get returns Herdr's view of a pane. A missing pane is an error matching
// ErrPaneNotFound. Get changes nothing and is retried once if the
// connection drops.
func (c *Client) Get(ctx context.Context, paneID string) (PaneInfo, error) {
	var r struct {
		Pane PaneInfo `json:"pane"`
	}
	err := c.call(ctx, "pane.get", map[string]string{"pane_id": paneID}, &r)
	return r.Pane, err
}

// Check reports whether the process git-lease started in p still runs: the
// pane exists and still shows p's terminal. A missing pane or a new
// terminal (Herdr restarted or handed off, or the ID now names another
// pane) is "not shown", never an error (the supervisor tells a handoff from
// a restart); labels and titles are not trusted. Errors are reserved
// for not reaching Herdr. Check changes nothing.
func (c *Client) Check(ctx context.Context, p Pane) (bool, error) {
	info, err := c.Get(ctx, p.PaneID)
	if errors.Is(err, ErrPaneNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return info.TerminalID == p.TerminalID, nil
}

// Find lists the panes whose label is exactly label, in every workspace.
// No match is an empty list, not an error. Find changes nothing.
func (c *Client) Find(ctx context.Context, label string) ([]PaneInfo, error) {
	var r struct {
		Panes []PaneInfo `json:"panes"`
	}
	if err := c.call(ctx, "pane.list", struct{}{}, &r); err != nil {
		return nil, err
	}
	var found []PaneInfo
	for _, p := range r.Panes {
		if p.Label == label {
			found = append(found, p)
		}
	}
	return found, nil
}

// Read returns the last lines of a pane's output as plain text (Herdr's
// "recent" source; lines <= 0 means Herdr's default of 80, and Herdr caps
// it at 1000). A missing pane matches ErrPaneNotFound. Read changes
// nothing.
func (c *Client) Read(ctx context.Context, paneID string, lines int) (string, error) {
	params := map[string]any{"pane_id": paneID, "source": "recent", "format": "text"}
	if lines > 0 {
		params["lines"] = lines
	}
	var r struct {
		Read struct {
			Text string `json:"text"`
		} `json:"read"`
	}
	err := c.call(ctx, "pane.read", params, &r)
	return r.Read.Text, err
}

// SendInput types line into a pane and presses Enter. It is not
// idempotent: a call whose answer was lost is not repeated, since the line
// may have been typed. A missing pane matches ErrPaneNotFound.
func (c *Client) SendInput(ctx context.Context, paneID, line string) error {
	params := map[string]any{"pane_id": paneID, "text": line, "keys": []string{"enter"}}
	return c.call(ctx, "pane.send_input", params, nil)
}

// Interrupt presses ctrl+c in a pane, the graceful cancel to try before
// Close. Pressing it twice may matter to the program, so a call whose
// answer was lost is not repeated. A missing pane matches ErrPaneNotFound.
func (c *Client) Interrupt(ctx context.Context, paneID string) error {
	params := map[string]any{"pane_id": paneID, "keys": []string{"ctrl+c"}}
	return c.call(ctx, "pane.send_keys", params, nil)
}

// Close closes p and kills its process, only if the pane under p's ID
// still shows p's terminal; any other pane under that ID is left alone (see
// CloseRelabeled). A pane that is already gone is not an error, so Close is
// idempotent: after an error, call it again.
func (c *Client) Close(ctx context.Context, p Pane) error {
	return c.closeIf(ctx, p, func(info PaneInfo) bool { return info.TerminalID == p.TerminalID })
}

// CloseRelabeled closes the pane under p's ID that shows another terminal
// but p's non-empty label: what a Herdr restart or live handoff leaves.
// The label alone does not prove the pane is the caller's: call it only
// with other evidence (git-lease's supervisor checks the runner's recorded
// process). A pane that is already gone is not an error.
func (c *Client) CloseRelabeled(ctx context.Context, p Pane) error {
	return c.closeIf(ctx, p, func(info PaneInfo) bool { return p.Label != "" && info.Label == p.Label })
}

func (c *Client) closeIf(ctx context.Context, p Pane, ours func(PaneInfo) bool) error {
	info, err := c.Get(ctx, p.PaneID)
	if errors.Is(err, ErrPaneNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !ours(info) {
		return nil
	}
	err = c.call(ctx, "pane.close", map[string]string{"pane_id": p.PaneID}, nil)
	if err != nil && !errors.Is(err, ErrPaneNotFound) {
		return fmt.Errorf("close herdr pane %s: %w", p.PaneID, err)
	}
	return nil
}
