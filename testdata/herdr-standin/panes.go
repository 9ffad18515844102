package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
)

func defaultCwd(cwd string) string {
	if cwd != "" {
		return cwd
	}
	wd, _ := os.Getwd()
	return wd
}

func (s *server) workspaceCreate(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p struct {
		Cwd   string            `json:"cwd"`
		Label string            `json:"label"`
		Env   map[string]string `json:"env"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.newWorkspace(p.Label, defaultCwd(p.Cwd))
	t := w.newTab("")
	root := s.newPane(t, "", w.cwd, p.Env, nil)
	return result{"type": "workspace_created", "workspace": w.info(), "tab": t.info(), "root_pane": root.info()}, nil
}

func (s *server) workspaceList(context.Context, json.RawMessage) (result, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := []result{}
	for _, w := range s.workspaces {
		list = append(list, w.info())
	}
	return result{"type": "workspace_list", "workspaces": list}, nil
}

func (s *server) paneSplit(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p struct {
		TargetPaneID string            `json:"target_pane_id"`
		Direction    string            `json:"direction"`
		Cwd          string            `json:"cwd"`
		Env          map[string]string `json:"env"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.Direction != "right" && p.Direction != "down" {
		return nil, invalid("unknown variant `%s`, expected `right` or `down`", p.Direction)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	target := s.panes[p.TargetPaneID]
	if target == nil {
		return nil, failure("pane_not_found", "pane not found")
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = target.cwd
	}
	return result{"type": "pane_info", "pane": s.newPane(target.tab, "", cwd, p.Env, nil).info()}, nil
}

func (s *server) layoutApply(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p struct {
		WorkspaceID string `json:"workspace_id"`
		TabID       string `json:"tab_id"`
		TabLabel    string `json:"tab_label"`
		Root        struct {
			Type    string            `json:"type"`
			Label   string            `json:"label"`
			Cwd     string            `json:"cwd"`
			Env     map[string]string `json:"env"`
			Command []string          `json:"command"`
		} `json:"root"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var w *workspace
	var replace *tab
	switch {
	case p.TabID != "" && p.WorkspaceID != "":
		return nil, failure("invalid_target", "use either tab_id or workspace_id, not both")
	case p.TabID != "":
		if replace = s.findTab(p.TabID); replace == nil {
			return nil, failure("tab_not_found", "tab %s not found", p.TabID)
		}
		w = replace.ws
	case p.WorkspaceID != "":
		if w = s.findWorkspace(p.WorkspaceID); w == nil {
			return nil, failure("workspace_not_found", "workspace %s not found", p.WorkspaceID)
		}
	default:
		return nil, failure("workspace_not_found", "no active workspace")
	}
	if p.Root.Type != "pane" {
		return nil, failure("invalid_layout", "the stand-in lays out a single pane only")
	}
	if p.Root.Command != nil && len(p.Root.Command) == 0 {
		return nil, failure("invalid_layout", "pane command must not be empty")
	}
	cwd := p.Root.Cwd
	if cwd == "" {
		cwd = w.cwd
	}
	t := w.newTab(p.TabLabel)
	np := s.newPane(t, strings.TrimSpace(p.Root.Label), cwd, p.Root.Env, p.Root.Command)
	if np.argv != nil {
		if err := s.start(np, np.argv); err != nil {
			s.removeTab(t)
			return nil, failure("layout_apply_failed", "%v", err)
		}
	}
	if replace != nil {
		s.removeTab(replace)
	}
	root := result{"type": "pane", "pane_id": np.id, "cwd": np.cwd}
	if np.label != "" {
		root["label"] = np.label
	}
	if np.argv != nil {
		root["command"] = np.argv
	}
	layout := result{"workspace_id": w.id, "tab_id": t.id, "zoomed": false, "focused_pane_id": np.id, "root": root}
	return result{"type": "layout_apply", "layout": layout}, nil
}

type paneTarget struct {
	PaneID string `json:"pane_id"`
}

func (s *server) paneGet(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p paneTarget
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.pane(p.PaneID)
	if err != nil {
		return nil, err
	}
	return result{"type": "pane_info", "pane": pn.info()}, nil
}

func (s *server) paneList(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.WorkspaceID != "" && s.findWorkspace(p.WorkspaceID) == nil {
		return nil, failure("workspace_not_found", "workspace %s not found", p.WorkspaceID)
	}
	list := []result{}
	for _, w := range s.workspaces {
		if p.WorkspaceID != "" && w.id != p.WorkspaceID {
			continue
		}
		for _, t := range w.tabs {
			for _, pn := range t.panes {
				list = append(list, pn.info())
			}
		}
	}
	return result{"type": "pane_list", "panes": list}, nil
}

func (s *server) paneRead(_ context.Context, params json.RawMessage) (result, *apiError) {
	p := struct {
		PaneID string `json:"pane_id"`
		Source string `json:"source"`
		Lines  int    `json:"lines"`
		Format string `json:"format"`
	}{Lines: 80, Format: "text"}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	switch {
	case p.Source != "visible" && p.Source != "recent" && p.Source != "recent_unwrapped" && p.Source != "detection":
		return nil, invalid("unknown variant `%s` for source", p.Source)
	case p.Format != "text" && p.Format != "ansi":
		return nil, invalid("unknown variant `%s` for format", p.Format)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.pane(p.PaneID)
	if err != nil {
		return nil, err
	}
	text, truncated := pn.out.tail(min(max(p.Lines, 1), 1000))
	read := result{
		"pane_id": pn.id, "workspace_id": pn.tab.ws.id, "tab_id": pn.tab.id,
		"source": p.Source, "format": p.Format, "text": text, "revision": 0, "truncated": truncated,
	}
	return result{"type": "pane_read", "read": read}, nil
}

// paneSendInput serves pane.send_input, pane.send_text and pane.send_keys:
// text is typed, then each key pressed.
func (s *server) paneSendInput(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p struct {
		PaneID string   `json:"pane_id"`
		Text   string   `json:"text"`
		Keys   []string `json:"keys"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	for _, k := range p.Keys {
		if key(k) == "" {
			return nil, failure("invalid_key", "unsupported key %s (the stand-in knows enter and ctrl+c)", k)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.pane(p.PaneID)
	if err != nil {
		return nil, err
	}
	pn.typed += p.Text
	for _, k := range p.Keys {
		if err := s.press(pn, key(k)); err != nil {
			return nil, failure("pane_send_failed", "%v", err)
		}
	}
	return result{"type": "ok"}, nil
}

func (s *server) paneClose(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p paneTarget
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.pane(p.PaneID)
	if err != nil {
		return nil, err
	}
	s.emitPane("pane.closed", pn)
	s.remove(pn)
	return result{"type": "ok"}, nil
}

// paneFocus marks a pane seen (looking at it turns done into idle, as in
// Herdr) and answers ok.
func (s *server) paneFocus(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p paneTarget
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.pane(p.PaneID)
	if err != nil {
		return nil, err
	}
	pn.seen = true
	s.statusChanged(pn)
	return result{"type": "ok"}, nil
}

func (s *server) restart(context.Context, json.RawMessage) (result, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.panes {
		p.stop()
		p.argv = nil
		p.terminalID = s.newTerminalID()
		p.out = &output{}
		p.typed = ""
		p.agent, p.state, p.seen = "", "unknown", true
		p.seq++
		p.revision++
	}
	s.endStreams()
	return result{"type": "ok"}, nil
}

// handoff is a live handoff: the processes, output and agent state stay,
// and every pane gets a new terminal ID under its old pane ID and label.
func (s *server) handoff(context.Context, json.RawMessage) (result, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.panes {
		p.terminalID = s.newTerminalID()
		p.revision++
	}
	s.endStreams()
	return result{"type": "ok"}, nil
}

func (s *server) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.panes {
		p.stop()
	}
	s.endStreams()
}
