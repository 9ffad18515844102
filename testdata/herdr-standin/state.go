package main

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// server holds the stand-in's workspaces and panes; mu guards everything.
type server struct {
	socket      string
	protocol    int
	version     string
	liveHandoff bool
	log         *os.File

	mu          sync.Mutex
	workspaces  []*workspace
	panes       map[string]*pane
	workspaceN  int
	terminalN   uint64
	dropIn      int
	delay       time.Duration
	events      bool // answer events.subscribe (see events.go)
	subscribers map[*subscriber]bool
}

type workspace struct {
	id, label, cwd string
	number         int
	tabN, paneN    int
	tabs           []*tab
}

type tab struct {
	id, label string
	number    int
	ws        *workspace
	panes     []*pane
}

// pane is one terminal. argv is nil for a shell pane.
type pane struct {
	id, terminalID, label, cwd string
	tab                        *tab
	env                        map[string]string
	argv                       []string
	run                        *run // the running process, if any
	out                        *output
	typed                      string // typed but not yet submitted with enter

	agent    string // reported agent label, "" when none
	state    string // idle, working, blocked or unknown
	seen     bool
	seq      uint64            // state_change_seq
	reports  map[string]uint64 // the last report seq per source
	revision uint64
}

func newServer(socket string, protocol int) *server {
	return &server{socket: socket, protocol: protocol, panes: map[string]*pane{}, subscribers: map[*subscriber]bool{}}
}

func (s *server) newTerminalID() string {
	s.terminalN++
	return fmt.Sprintf("term_%x%x", time.Now().UnixMicro(), s.terminalN)
}

func (s *server) newWorkspace(label, cwd string) *workspace {
	s.workspaceN++
	w := &workspace{id: fmt.Sprintf("w%d", s.workspaceN), number: s.workspaceN, label: label, cwd: cwd}
	s.workspaces = append(s.workspaces, w)
	return w
}

func (w *workspace) newTab(label string) *tab {
	w.tabN++
	t := &tab{id: fmt.Sprintf("%s:t%d", w.id, w.tabN), number: w.tabN, label: label, ws: w}
	w.tabs = append(w.tabs, t)
	return t
}

func (s *server) newPane(t *tab, label, cwd string, env map[string]string, argv []string) *pane {
	t.ws.paneN++
	p := &pane{
		id:         fmt.Sprintf("%s:p%d", t.ws.id, t.ws.paneN),
		terminalID: s.newTerminalID(),
		label:      label,
		cwd:        cwd,
		tab:        t,
		env:        env,
		argv:       argv,
		out:        &output{},
		state:      "unknown",
		seen:       true,
	}
	t.panes = append(t.panes, p)
	s.panes[p.id] = p
	return p
}

// remove closes a pane and kills its process; the last pane of a tab
// closes the tab, and the last tab of a workspace closes the workspace.
func (s *server) remove(p *pane) {
	p.stop()
	delete(s.panes, p.id)
	t := p.tab
	t.panes = slices.DeleteFunc(t.panes, func(q *pane) bool { return q == p })
	if len(t.panes) == 0 {
		s.removeTab(t)
	}
}

func (s *server) removeTab(t *tab) {
	for _, p := range slices.Clone(t.panes) {
		p.stop()
		delete(s.panes, p.id)
	}
	w := t.ws
	w.tabs = slices.DeleteFunc(w.tabs, func(u *tab) bool { return u == t })
	if len(w.tabs) == 0 {
		s.workspaces = slices.DeleteFunc(s.workspaces, func(v *workspace) bool { return v == w })
	}
}

func (s *server) findWorkspace(id string) *workspace {
	for _, w := range s.workspaces {
		if w.id == id {
			return w
		}
	}
	return nil
}

func (s *server) findTab(id string) *tab {
	for _, w := range s.workspaces {
		for _, t := range w.tabs {
			if t.id == id {
				return t
			}
		}
	}
	return nil
}

func (s *server) pane(id string) (*pane, *apiError) {
	p := s.panes[id]
	if p == nil {
		return nil, failure("pane_not_found", "pane %s not found", id)
	}
	return p, nil
}

// status is the agent status Herdr shows: idle that nobody has seen is done.
func (p *pane) status() string {
	if p.state == "idle" && !p.seen {
		return "done"
	}
	return p.state
}

func (p *pane) info() result {
	r := result{
		"pane_id":      p.id,
		"terminal_id":  p.terminalID,
		"workspace_id": p.tab.ws.id,
		"tab_id":       p.tab.id,
		"focused":      false,
		"cwd":          p.cwd,
		"agent_status": p.status(),
		"revision":     p.revision,
	}
	if p.label != "" {
		r["label"] = p.label
	}
	if p.agent != "" {
		r["agent"] = p.agent
	}
	return r
}

func (p *pane) agentInfo() result {
	return result{
		"terminal_id":      p.terminalID,
		"agent":            p.agent,
		"agent_status":     p.status(),
		"workspace_id":     p.tab.ws.id,
		"tab_id":           p.tab.id,
		"pane_id":          p.id,
		"focused":          false,
		"state_change_seq": p.seq,
		"cwd":              p.cwd,
		"revision":         p.revision,
	}
}

func (t *tab) info() result {
	return result{
		"tab_id":       t.id,
		"workspace_id": t.ws.id,
		"number":       t.number,
		"label":        t.label,
		"focused":      false,
		"pane_count":   len(t.panes),
		"agent_status": "unknown",
	}
}

func (w *workspace) info() result {
	panes := 0
	for _, t := range w.tabs {
		panes += len(t.panes)
	}
	return result{
		"workspace_id":  w.id,
		"number":        w.number,
		"label":         w.label,
		"focused":       false,
		"pane_count":    panes,
		"tab_count":     len(w.tabs),
		"active_tab_id": w.tabs[0].id,
		"agent_status":  "unknown",
	}
}
