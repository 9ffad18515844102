package herdr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// ErrNoEvents means the server does not offer events.subscribe: poll.
var ErrNoEvents = errors.New("herdr offers no event subscription")

// Event names Herdr streams (herdrdev/herdr 1c76079f, src/api/schema/events.rs):
// lifecycle events in snake case, subscription events with dots.
const (
	EventPaneExited    = "pane_exited"               // the pane's own process exited; Herdr removes the pane
	EventPaneClosed    = "pane_closed"               // pane.close closed it
	EventStatusChanged = "pane.agent_status_changed" // the agent shows another status
)

// Event is one thing Herdr pushed about a pane.
type Event struct {
	Kind   string
	PaneID string
	Status Status // with EventStatusChanged
}

// Subscribe opens an event stream (events.subscribe) about one pane: its
// process exiting, its closing, and its agent's status changes. The answer
// must come within the client's Timeout; the stream then lasts until ctx
// ends or Herdr goes away (a restart or a live handoff replaces Herdr's
// server, which drops every connection), and the channel is closed then.
// Herdr sends no end-of-stream message, and drops events for a reader that
// falls 512 behind, so a consumer takes an event, or the end of the
// stream, as a cue to read the pane's state again, not as the state
// itself. A server that does not know the method fails with ErrNoEvents,
// a missing pane with ErrPaneNotFound.
func (c *Client) Subscribe(ctx context.Context, paneID string) (<-chan Event, error) {
	params := map[string]any{"subscriptions": []map[string]string{
		{"type": "pane.exited"},
		{"type": "pane.closed"},
		{"type": "pane.agent_status_changed", "pane_id": paneID},
	}}
	ctx, cancel := context.WithCancel(ctx)
	late := time.AfterFunc(c.timeout(), cancel)
	s, err := c.open(ctx, "events.subscribe", methods["events.subscribe"].result, params, nil)
	if !late.Stop() && err == nil {
		err = c.late(ctx, "events.subscribe")
	}
	if err != nil {
		if s != nil {
			s.Close()
		}
		cancel()
		var herr *Error
		if errors.As(err, &herr) && herr.Code == "invalid_request" {
			return nil, fmt.Errorf("%w: %v", ErrNoEvents, err)
		}
		return nil, err
	}
	events := make(chan Event)
	go func() {
		defer close(events)
		defer cancel()
		defer s.Close()
		for {
			line, err := s.lines.ReadBytes('\n')
			if err != nil {
				return
			}
			var ev struct {
				Event string `json:"event"`
				Data  struct {
					PaneID      string `json:"pane_id"`
					AgentStatus Status `json:"agent_status"`
				} `json:"data"`
			}
			if json.Unmarshal(line, &ev) != nil || ev.Data.PaneID != paneID {
				continue
			}
			switch ev.Event {
			case EventPaneExited, EventPaneClosed, EventStatusChanged:
			default:
				continue
			}
			select {
			case events <- Event{Kind: ev.Event, PaneID: paneID, Status: ev.Data.AgentStatus}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return events, nil
}

// Watch pushes a wake-up whenever Herdr reports that the endpoint's pane
// exited or closed or its agent's status changed (several that arrive
// before the waiter looks make one), and closes the channel when Herdr's
// stream ends (see Subscribe). It fails when Herdr offers no stream
// (ErrNoEvents) or the pane is gone: the waiter then polls Alive.
func (s *Supervisor) Watch(ctx context.Context, e sandbox.Endpoint) (<-chan struct{}, error) {
	events, err := s.Client.Subscribe(ctx, e.PaneID)
	if err != nil {
		return nil, err
	}
	wake := make(chan struct{}, 1)
	go func() {
		defer close(wake)
		for range events {
			select {
			case wake <- struct{}{}:
			default: // a wake-up is already waiting
			}
		}
	}()
	return wake, nil
}
