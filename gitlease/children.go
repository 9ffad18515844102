package gitlease

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/git-lease/git-lease/refs"
)

// A child lease is a lease of its own (sandbox, branch, result) that a
// lease's work started: a reviewer, a test runner, a sub-task. Its record
// names its parent, and its parent's log gets an event naming it, so that
// either log leads to the other. It serves its parent's mission.

// parentOf loads the lease a child is to be started under: one of this
// clone's (both logs are written here) whose mission the child shares.
func parentOf(repo *refs.Repo, prefix, mission string) (*Execution, error) {
	p, err := LoadPrefix(repo, prefix)
	if err != nil {
		return nil, fmt.Errorf("--parent: %w", err)
	}
	switch {
	case p.ReadOnly():
		return nil, fmt.Errorf("--parent %s: %w", p.Lease.ID, ErrNewerRecord)
	case p.StartedElsewhere():
		return nil, fmt.Errorf("--parent: %w", p.startedElsewhere("start its children"))
	case mission != "" && mission != p.Lease.Mission:
		return nil, fmt.Errorf("--mission %s: a child serves its parent's mission, and lease %s's is %q", mission, p.Lease.ID, p.Lease.Mission)
	}
	return p, nil
}

// parentID is the ID of parent, "" for none.
func parentID(parent *Execution) refs.ID {
	if parent == nil {
		return ""
	}
	return parent.Lease.ID
}

// addChild records child in the parent's log: an event "child-<id>". The
// parent may be running, its runner appending events too, so a stale tip
// is read again and the event retried.
func (x *Execution) addChild(ctx context.Context, child refs.ID) error {
	for tries := 0; ; tries++ {
		err := x.Event(ctx, "child-"+string(child), func(l *Lease) {
			if !slices.Contains(l.Children, child) {
				l.Children = append(l.Children, child)
			}
		}, nil)
		if err == nil || !errors.Is(err, refs.ErrStale) || tries == 20 {
			return err
		}
		y, err := Load(x.Repo, x.Lease.ID)
		if err != nil {
			return err
		}
		*x = *y
	}
}
