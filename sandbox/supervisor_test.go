package sandbox

import (
	"context"
	"errors"
	"testing"
)

// streams is a Watcher whose streams the test pushes on and ends; it
// refuses to open more than open streams.
type streams struct {
	Supervisor
	open   int
	opened []chan struct{}
}

func (s *streams) Watch(context.Context, Endpoint) (<-chan struct{}, error) {
	if len(s.opened) == s.open {
		return nil, errors.New("unreachable")
	}
	ch := make(chan struct{}, 1)
	s.opened = append(s.opened, ch)
	return ch, nil
}

// receive hands what w's stream has to Note, as a waiter does.
func receive(w *EndpointWatch) {
	_, ok := <-w.Pushed()
	w.Note(ok)
}

// TestEndpointWatchReopensThenPolls: a push makes one Due; a stream that
// ends is reopened and makes Due; one that cannot be reopened turns the
// watch into polling, where every Due is true. Without a Watcher the
// watch polls from the start.
func TestEndpointWatchReopensThenPolls(t *testing.T) {
	s := &streams{open: 2}
	w := WatchEndpoint(context.Background(), s, Endpoint{})
	if w.Polling() || !w.Due() || w.Due() {
		t.Fatal("a new watch asks once, then waits for pushes")
	}
	s.opened[0] <- struct{}{}
	receive(w)
	if !w.Due() || w.Due() {
		t.Fatal("a push must make Due true once")
	}
	close(s.opened[0])
	receive(w)
	if w.Polling() || len(s.opened) != 2 || !w.Due() || w.Due() {
		t.Fatalf("an ended stream must be reopened (%d opened) and make Due true once", len(s.opened))
	}
	close(s.opened[1])
	receive(w)
	if !w.Polling() || w.Pushed() != nil || !w.Due() || !w.Due() {
		t.Fatal("a stream that cannot be reopened must turn the watch into polling")
	}
	var none struct{ Supervisor }
	if w := WatchEndpoint(context.Background(), none, Endpoint{}); !w.Polling() || !w.Due() || !w.Due() {
		t.Fatal("a supervisor that cannot push is polled")
	}
	var nilWatch *EndpointWatch
	if !nilWatch.Polling() || !nilWatch.Due() || nilWatch.Pushed() != nil {
		t.Fatal("a nil watch polls")
	}
}
