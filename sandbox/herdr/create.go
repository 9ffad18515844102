package herdr

import (
	"context"
	"errors"
	"fmt"
)

var (
	// ErrLabelTaken refuses a create whose label is already in use: the
	// label is how a create whose answer was lost is found again.
	ErrLabelTaken = errors.New("label already in use in herdr")
	// ErrAmbiguous means several panes or workspaces carry a label that
	// should be unique.
	ErrAmbiguous = errors.New("several herdr objects carry the label")
)

// WorkspaceSpec describes a workspace to create. Label is required and
// must be unique (git-lease uses lease:<id>); Cwd "" lets Herdr choose;
// Env applies to the workspace's first process only.
type WorkspaceSpec struct {
	Label string
	Cwd   string
	Env   map[string]string
}

// Workspace is a created workspace: its ID, its first tab, and the shell
// pane Herdr starts in that tab.
type Workspace struct {
	WorkspaceID string
	TabID       string
	Root        PaneInfo
}

type workspaceInfo struct {
	WorkspaceID string `json:"workspace_id"`
	Label       string `json:"label"`
	ActiveTabID string `json:"active_tab_id"`
}

// CreateWorkspace creates a workspace without focusing it. It refuses a
// label that a workspace already carries (ErrLabelTaken). It is not
// retried: if the answer is lost, it looks for the label, and returns the
// one workspace that carries it, ErrNoAnswer when none does yet (the
// request may still be applied: look again before creating), or
// ErrAmbiguous.
func (c *Client) CreateWorkspace(ctx context.Context, spec WorkspaceSpec) (Workspace, error) {
	if spec.Label == "" {
		return Workspace{}, errors.New("herdr workspace.create: a label is required to find the workspace again")
	}
	found, err := c.workspaces(ctx, spec.Label)
	if err != nil {
		return Workspace{}, err
	}
	if len(found) > 0 {
		return Workspace{}, fmt.Errorf("%w: workspace %s is labelled %q: close it or reuse it", ErrLabelTaken, found[0].WorkspaceID, spec.Label)
	}
	params := struct {
		Cwd   string            `json:"cwd,omitempty"`
		Label string            `json:"label"`
		Env   map[string]string `json:"env,omitempty"`
		Focus noFocus           `json:"focus"`
	}{Cwd: spec.Cwd, Label: spec.Label, Env: spec.Env}
	var r struct {
		Workspace workspaceInfo `json:"workspace"`
		Tab       struct {
			TabID string `json:"tab_id"`
		} `json:"tab"`
		Root PaneInfo `json:"root_pane"`
	}
	err = c.call(ctx, "workspace.create", params, &r)
	if errors.Is(err, ErrNoAnswer) {
		return c.lostWorkspace(ctx, spec.Label, err)
	}
	if err != nil {
		return Workspace{}, err
	}
	return Workspace{WorkspaceID: r.Workspace.WorkspaceID, TabID: r.Tab.TabID, Root: r.Root}, nil
}

// workspaces lists the workspaces labelled label.
func (c *Client) workspaces(ctx context.Context, label string) ([]workspaceInfo, error) {
	var r struct {
		Workspaces []workspaceInfo `json:"workspaces"`
	}
	if err := c.call(ctx, "workspace.list", struct{}{}, &r); err != nil {
		return nil, err
	}
	var found []workspaceInfo
	for _, w := range r.Workspaces {
		if w.Label == label {
			found = append(found, w)
		}
	}
	return found, nil
}

// lostWorkspace finds the workspace a workspace.create with a lost answer
// made, by its label.
func (c *Client) lostWorkspace(ctx context.Context, label string, lost error) (Workspace, error) {
	found, err := c.workspaces(ctx, label)
	if err != nil {
		return Workspace{}, fmt.Errorf("%w; then looking for workspace %q: %v", lost, label, err)
	}
	switch len(found) {
	case 0:
		return Workspace{}, fmt.Errorf("%w; no workspace is labelled %q yet, but one may still appear: look again before creating it", lost, label)
	case 1:
	default:
		return Workspace{}, fmt.Errorf("%w: %d workspaces are labelled %q: close the extra ones", ErrAmbiguous, len(found), label)
	}
	w := Workspace{WorkspaceID: found[0].WorkspaceID, TabID: found[0].ActiveTabID}
	var r struct {
		Panes []PaneInfo `json:"panes"`
	}
	if err := c.call(ctx, "pane.list", map[string]string{"workspace_id": w.WorkspaceID}, &r); err != nil {
		return Workspace{}, err
	}
	for _, p := range r.Panes {
		if p.TabID == w.TabID {
			w.Root = p
			return w, nil
		}
	}
	return Workspace{}, fmt.Errorf("%w; workspace %s labelled %q has no pane in tab %s: close it and start again", lost, w.WorkspaceID, label, w.TabID)
}

// SplitSpec describes a pane to split off TargetPaneID. Direction is
// "right" or "down"; Cwd "" follows the target pane; Env applies to the new
// pane's shell only.
type SplitSpec struct {
	TargetPaneID string
	Direction    string
	Cwd          string
	Env          map[string]string
}

// Split opens a shell pane beside spec.TargetPaneID without focusing it. A
// missing target matches ErrPaneNotFound. It is never retried, and a
// lost answer cannot be recovered (Herdr gives a split pane no label): the
// error matches ErrNoAnswer. Use Run for a pane git-lease must find again.
func (c *Client) Split(ctx context.Context, spec SplitSpec) (PaneInfo, error) {
	params := struct {
		TargetPaneID string            `json:"target_pane_id"`
		Direction    string            `json:"direction"`
		Cwd          string            `json:"cwd,omitempty"`
		Env          map[string]string `json:"env,omitempty"`
		Focus        noFocus           `json:"focus"`
	}{spec.TargetPaneID, spec.Direction, spec.Cwd, spec.Env, noFocus{}}
	var r struct {
		Pane PaneInfo `json:"pane"`
	}
	err := c.call(ctx, "pane.split", params, &r)
	if errors.Is(err, ErrNoAnswer) {
		return PaneInfo{}, fmt.Errorf("%w; a split pane may have been added beside %s: check with `herdr pane list`", err, spec.TargetPaneID)
	}
	return r.Pane, err
}
