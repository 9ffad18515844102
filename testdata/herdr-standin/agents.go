package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

func (s *server) reportAgent(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p struct {
		PaneID string  `json:"pane_id"`
		Source string  `json:"source"`
		Agent  string  `json:"agent"`
		State  string  `json:"state"`
		Seq    *uint64 `json:"seq"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	// Herdr's reportable states: done is something Herdr derives, not a report.
	if !slices.Contains([]string{"idle", "working", "blocked", "unknown"}, p.State) {
		return nil, invalid("unknown variant `%s`, expected one of `idle`, `working`, `blocked`, `unknown`", p.State)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.pane(p.PaneID)
	if err != nil {
		return nil, err
	}
	agent := strings.TrimSpace(p.Agent)
	if agent == "" {
		return nil, failure("invalid_agent", "agent label must not be empty")
	}
	if p.Seq != nil {
		// As Herdr: a report not newer than the source's last is dropped.
		if last, ok := pn.reports[p.Source]; ok && *p.Seq <= last {
			return result{"type": "ok"}, nil
		}
		if pn.reports == nil {
			pn.reports = map[string]uint64{}
		}
		pn.reports[p.Source] = *p.Seq
	}
	before := pn.status()
	// Idle after working or blocked (or a known agent's unknown) is a
	// completion nobody has seen yet: Herdr shows it as done.
	completion := pn.state == "working" || pn.state == "blocked" || pn.state == "unknown" && pn.agent != "" && pn.agent == agent
	switch {
	case p.State != "idle":
		pn.seen = true
	case completion:
		pn.seen = false
	}
	pn.agent, pn.state = agent, p.State
	if pn.status() != before {
		pn.seq++
		s.statusChanged(pn)
	}
	pn.revision++
	return result{"type": "ok"}, nil
}

func (s *server) releaseAgent(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p struct {
		PaneID string `json:"pane_id"`
		Source string `json:"source"`
		Agent  string `json:"agent"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.pane(p.PaneID)
	if err != nil {
		return nil, err
	}
	agent := strings.TrimSpace(p.Agent)
	if agent == "" {
		return nil, failure("invalid_agent", "agent label must not be empty")
	}
	if pn.agent == agent {
		pn.agent, pn.state, pn.seen = "", "unknown", true
		pn.seq++
		pn.revision++
		s.statusChanged(pn)
	}
	return result{"type": "ok"}, nil
}

// agentWait answers when the agent in the target pane shows one of the
// wanted statuses. Like Herdr it pins the pane's terminal: the pane
// closing, its process exiting, a restart or a release ends the wait with
// agent_not_running.
func (s *server) agentWait(ctx context.Context, params json.RawMessage) (result, *apiError) {
	var p struct {
		Target    string   `json:"target"`
		Until     []string `json:"until"`
		TimeoutMS *int64   `json:"timeout_ms"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if len(p.Until) == 0 {
		p.Until = []string{"idle", "done", "blocked"}
	}
	var deadline <-chan time.Time
	if p.TimeoutMS != nil {
		deadline = time.After(time.Duration(*p.TimeoutMS) * time.Millisecond)
	}
	s.mu.Lock()
	pn := s.panes[p.Target]
	if pn == nil || pn.agent == "" {
		s.mu.Unlock()
		return nil, failure("agent_not_found", "agent target %s not found", p.Target)
	}
	terminal := pn.terminalID
	s.mu.Unlock()

	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		if s.panes[p.Target] != pn || pn.terminalID != terminal || pn.agent == "" {
			s.mu.Unlock()
			return nil, failure("agent_not_running", "agent is no longer running in the target pane")
		}
		if slices.Contains(p.Until, pn.status()) {
			info := pn.agentInfo()
			s.mu.Unlock()
			return result{"type": "agent_info", "agent": info}, nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, failure("client_disconnected", "the client hung up")
		case <-deadline:
			return nil, failure("timeout", "timed out waiting for agent status")
		case <-tick.C:
		}
	}
}
