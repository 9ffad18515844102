package herdr

import (
	"context"
	"errors"
	"fmt"
)

// RunSpec describes a pane that runs Argv directly (no shell), in a new
// tab. Name exactly one of WorkspaceID (add the tab there) or ReplaceTabID
// (the new tab replaces that one, such as a new workspace's shell tab; Herdr
// opens the new tab before closing the old). Label is required and must be
// unique: git-lease uses lease:<id>. Cwd "" lets Herdr choose; Env applies
// to the process only.
type RunSpec struct {
	WorkspaceID  string
	ReplaceTabID string
	Label        string
	Cwd          string
	Env          map[string]string
	Argv         []string
}

// Run opens a pane running spec.Argv (layout.apply) without focusing it and
// returns its identity. It refuses a label that a pane already carries
// (ErrLabelTaken). It is never retried: if the answer is lost, it looks for
// the label, and returns the one pane that carries it, ErrNoAnswer when
// none does yet (the request may still be applied: Find before running
// again), or ErrAmbiguous.
//
// Herdr removes a pane when its process exits, so the program must stay
// alive for as long as git-lease wants to read the pane.
func (c *Client) Run(ctx context.Context, spec RunSpec) (Pane, error) {
	if err := spec.check(); err != nil {
		return Pane{}, err
	}
	found, err := c.Find(ctx, spec.Label)
	if err != nil {
		return Pane{}, err
	}
	if len(found) > 0 {
		return Pane{}, fmt.Errorf("%w: pane %s is labelled %q: close it or adopt it", ErrLabelTaken, found[0].PaneID, spec.Label)
	}
	type layoutPane struct {
		Type    string            `json:"type"`
		Label   string            `json:"label"`
		Cwd     string            `json:"cwd,omitempty"`
		Env     map[string]string `json:"env,omitempty"`
		Command []string          `json:"command"`
	}
	params := struct {
		WorkspaceID string     `json:"workspace_id,omitempty"`
		TabID       string     `json:"tab_id,omitempty"`
		TabLabel    string     `json:"tab_label"`
		Focus       noFocus    `json:"focus"`
		Root        layoutPane `json:"root"`
	}{
		WorkspaceID: spec.WorkspaceID,
		TabID:       spec.ReplaceTabID,
		TabLabel:    spec.Label,
		Root:        layoutPane{Type: "pane", Label: spec.Label, Cwd: spec.Cwd, Env: spec.Env, Command: spec.Argv},
	}
	var r struct {
		Layout struct {
			Root struct {
				Type   string `json:"type"`
				PaneID string `json:"pane_id"`
			} `json:"root"`
		} `json:"layout"`
	}
	err = c.call(ctx, "layout.apply", params, &r)
	if errors.Is(err, ErrNoAnswer) {
		return c.lostPane(ctx, spec.Label, err)
	}
	if err != nil {
		return Pane{}, err
	}
	if r.Layout.Root.Type != "pane" || r.Layout.Root.PaneID == "" {
		return Pane{}, fmt.Errorf("herdr layout.apply: answer names no root pane: find pane %q and close it", spec.Label)
	}
	info, err := c.Get(ctx, r.Layout.Root.PaneID)
	if err != nil {
		return Pane{}, fmt.Errorf("pane %s labelled %q was opened, but: %w", r.Layout.Root.PaneID, spec.Label, err)
	}
	return info.Pane(), nil
}

func (s RunSpec) check() error {
	switch {
	case (s.WorkspaceID == "") == (s.ReplaceTabID == ""):
		return errors.New("herdr layout.apply: name exactly one of a workspace or a tab to replace")
	case s.Label == "":
		return errors.New("herdr layout.apply: a label is required to find the pane again")
	case len(s.Argv) == 0:
		return errors.New("herdr layout.apply: no command to run")
	}
	return nil
}

// lostPane finds the pane a create with a lost answer made, by its label.
func (c *Client) lostPane(ctx context.Context, label string, lost error) (Pane, error) {
	found, err := c.Find(ctx, label)
	if err != nil {
		return Pane{}, fmt.Errorf("%w; then looking for pane %q: %v", lost, label, err)
	}
	switch len(found) {
	case 0:
		return Pane{}, fmt.Errorf("%w; no pane is labelled %q yet, but one may still appear: Find it before running again", lost, label)
	case 1:
		return found[0].Pane(), nil
	default:
		ids := make([]string, len(found))
		for i, p := range found {
			ids[i] = p.PaneID
		}
		return Pane{}, fmt.Errorf("%w: panes %v are labelled %q: close the extra ones", ErrAmbiguous, ids, label)
	}
}
