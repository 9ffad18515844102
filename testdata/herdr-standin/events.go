package main

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"time"
)

// Event streams, as Herdr's events.subscribe (read from herdrdev/herdr at
// commit 1c76079f: src/api/server.rs stream_subscriptions,
// src/api/subscriptions.rs, src/api/schema/events.rs):
//
//	{"id","method":"events.subscribe","params":{"subscriptions":[{"type":"pane.exited"},
//	    {"type":"pane.closed"},{"type":"pane.agent_status_changed","pane_id":"w1:p1"}]}}
//
// is answered {"id","result":{"type":"subscription_started"}}, and then the
// connection stays open and carries one JSON line per event:
//
//	{"event":"pane_exited","data":{"type":"pane_exited","pane_id","workspace_id"}}
//	{"event":"pane_closed","data":{"type":"pane_closed","pane_id","workspace_id"}}
//	{"event":"pane.agent_status_changed","data":{"pane_id","workspace_id","agent_status","agent"}}
//
// (Herdr names lifecycle events in snake case but subscription events with
// dots.) pane.exited and pane.closed are every pane's, pane.agent_status_changed
// the named pane's only, optionally only for one agent_status, and then
// also sent at once when the pane already shows it. A pane the status
// subscription names that does not exist fails the whole request with
// pane_not_found (under the id "<id>:sub:<index>:probe", as Herdr's probe
// answers). pane_exited is sent when a pane's own process exits (the pane is
// then removed), pane_closed on pane.close. There is no end-of-stream
// message: the stream ends when the client hangs up or the server goes away,
// which here is a standin.restart, a standin.handoff (both replace Herdr's
// server process) or SIGTERM. Herdr keeps its last 512 events for slow
// subscribers and drops older ones; the stand-in drops an event a
// subscriber has 512 unread events ahead of. ping advertises no capability
// for it: a server that does not know the method answers invalid_request
// (-events=false).

// subscriber is one open events.subscribe stream.
type subscriber struct {
	kinds      map[string]bool // lifecycle events wanted, by event name
	statusPane string          // the pane whose agent status is wanted, if any
	statusOnly string          // only this agent status, if set
	events     chan []byte
	end        chan struct{} // closed when the server goes away
	lastStatus string        // the status last seen, sent or not
}

// subscribe serves one events.subscribe request on conn until the stream
// ends.
func (s *server) subscribe(ctx context.Context, conn net.Conn, req request) {
	var p struct {
		Subscriptions []struct {
			Type        string `json:"type"`
			PaneID      string `json:"pane_id"`
			AgentStatus string `json:"agent_status"`
		} `json:"subscriptions"`
	}
	if err := decode(req.Params, &p); err != nil {
		conn.Write(answer("", nil, err))
		return
	}
	sub := &subscriber{kinds: map[string]bool{}, events: make(chan []byte, 512), end: make(chan struct{})}
	s.mu.Lock()
	for i, want := range p.Subscriptions {
		switch want.Type {
		case "pane.exited", "pane.closed":
			sub.kinds[want.Type] = true
		case "pane.agent_status_changed":
			pn := s.panes[want.PaneID]
			if pn == nil {
				s.mu.Unlock()
				conn.Write(answer(req.ID+":sub:"+strconv.Itoa(i)+":probe", nil, failure("pane_not_found", "pane %s not found", want.PaneID)))
				return
			}
			sub.statusPane, sub.statusOnly, sub.lastStatus = pn.id, want.AgentStatus, pn.status()
			if want.AgentStatus != "" && want.AgentStatus == pn.status() {
				sub.push(statusEvent(pn))
			}
		default:
			s.mu.Unlock()
			conn.Write(answer("", nil, invalid("the stand-in streams pane.exited, pane.closed and pane.agent_status_changed, not %q", want.Type)))
			return
		}
	}
	s.subscribers[sub] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subscribers, sub)
		s.mu.Unlock()
	}()
	if _, err := conn.Write(answer(req.ID, result{"type": "subscription_started"}, nil)); err != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.end:
			return
		case line := <-sub.events:
			conn.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := conn.Write(line); err != nil {
				return
			}
		}
	}
}

// push queues one event line, or drops it when the subscriber lags 512
// events behind.
func (sub *subscriber) push(event result) {
	line, _ := json.Marshal(event)
	select {
	case sub.events <- append(line, '\n'):
	default:
	}
}

// emitPane sends a pane lifecycle event (pane.exited, pane.closed) about p.
// Called with s.mu held.
func (s *server) emitPane(name string, p *pane) {
	kind := map[string]string{"pane.exited": "pane_exited", "pane.closed": "pane_closed"}[name]
	for sub := range s.subscribers {
		if sub.kinds[name] {
			sub.push(result{"event": kind, "data": result{"type": kind, "pane_id": p.id, "workspace_id": p.tab.ws.id}})
		}
	}
}

// statusChanged tells the subscribers to p's agent status when it shows a
// new one. Called with s.mu held after every change of p's agent state.
func (s *server) statusChanged(p *pane) {
	for sub := range s.subscribers {
		if sub.statusPane != p.id || sub.lastStatus == p.status() {
			continue
		}
		sub.lastStatus = p.status()
		if sub.statusOnly == "" || sub.statusOnly == p.status() {
			sub.push(statusEvent(p))
		}
	}
}

func statusEvent(p *pane) result {
	data := result{"pane_id": p.id, "workspace_id": p.tab.ws.id, "agent_status": p.status()}
	if p.agent != "" {
		data["agent"] = p.agent
	}
	return result{"event": "pane.agent_status_changed", "data": data}
}

// endStreams ends every event stream, as Herdr's server going away does.
// Called with s.mu held.
func (s *server) endStreams() {
	for sub := range s.subscribers {
		close(sub.end)
		delete(s.subscribers, sub)
	}
}
