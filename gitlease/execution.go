package gitlease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/git-lease/git-lease/refs"
)

// Execution is a lease as read from its log: the record and the log commit
// it came from. Moves are compare-and-swap on that commit.
type Execution struct {
	Repo  *refs.Repo
	Lease *Lease
	Tip   plumbing.Hash
	// staged is closed when the review worktree's checkout of the base,
	// made while the agent works, is done (nil when none was started).
	staged chan struct{}
}

// Load reads the newest record of id.
func Load(repo *refs.Repo, id refs.ID) (*Execution, error) {
	tip, err := repo.LogTip(id)
	if err != nil {
		return nil, err
	}
	return LoadAt(repo, id, tip)
}

// LoadAt reads the record of lease id in the log commit tip, which need not
// be where refs/leases/<id> is: a fetched log (ListRemote), say. It only
// reads; a move would compare-and-swap refs/leases/<id> against tip.
func LoadAt(repo *refs.Repo, id refs.ID, tip plumbing.Hash) (*Execution, error) {
	b, err := repo.ReadFile(tip, recordFile, maxRecord)
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", id, err)
	}
	l, err := parseLease(b)
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", id, err)
	}
	if l.ID != id {
		return nil, fmt.Errorf("lease %s: its record names lease %s", id, l.ID)
	}
	return &Execution{Repo: repo, Lease: l, Tip: tip}, nil
}

// LoadPrefix resolves a user-typed ID or prefix and loads it.
func LoadPrefix(repo *refs.Repo, prefix string) (*Execution, error) {
	id, err := repo.ResolveID(prefix)
	if err != nil {
		return nil, err
	}
	return Load(repo, id)
}

// ErrNewerRecord is returned by any change to a lease whose record a newer
// git-lease wrote.
var ErrNewerRecord = errors.New("written by a newer git-lease: read-only here (upgrade git-lease to change it)")

// ReadOnly reports whether the record was written by a newer git-lease:
// it is shown from what this one knows of it, and never changed.
func (x *Execution) ReadOnly() bool { return x.Lease.Version > RecordVersion }

// Move records a transition to state to, with extra files for the log tree
// and extra ref updates in the same transaction. mutate, when not nil,
// changes the record before it is written. On error nothing is recorded and
// the in-memory record is unchanged.
func (x *Execution) Move(ctx context.Context, to State, mutate func(*Lease), files map[string][]byte, extra ...refs.RefUpdate) error {
	if x.ReadOnly() {
		return fmt.Errorf("lease %s: %w", x.Lease.ID, ErrNewerRecord)
	}
	from := x.Lease.State
	if x.Tip.IsZero() {
		from = New
	}
	if err := checkMove(from, to); err != nil {
		return fmt.Errorf("lease %s: %w", x.Lease.ID, err)
	}
	next, files := x.nextRecord(to, mutate, files)
	if from == New {
		// Marked as started in this clone (StartedElsewhere) before the
		// lease exists.
		if err := os.MkdirAll(x.RunDir(), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(x.RunDir(), startedMarker), nil, 0o600); err != nil {
			return err
		}
	}
	reason := ""
	if to == Failed || to == Quarantined || to == Canceled || to == Rejected {
		reason = oneLine(next.Reason)
	}
	msg, err := refs.TransitionMessage(next.ID, refs.State(from), refs.State(to), reason)
	if err != nil {
		return err
	}
	tip, err := x.Repo.Append(ctx, next.ID, x.Tip, files, msg, extra...)
	if err != nil {
		return x.noSpace(err)
	}
	x.Lease, x.Tip = next, tip
	return nil
}

// Event records something that happened to the lease without changing its
// state (cleanup, a rebase conflict, a supervisor event): one log commit
// "lease <id>: <state>: <event>" with a Lease-Event trailer.
func (x *Execution) Event(ctx context.Context, event string, mutate func(*Lease), files map[string][]byte, extra ...refs.RefUpdate) error {
	if x.ReadOnly() {
		return fmt.Errorf("lease %s: %w", x.Lease.ID, ErrNewerRecord)
	}
	next, files := x.nextRecord(x.Lease.State, mutate, files)
	msg, err := refs.EventMessage(next.ID, refs.State(next.State), refs.Event(event))
	if err != nil {
		return err
	}
	tip, err := x.Repo.Append(ctx, next.ID, x.Tip, files, msg, extra...)
	if err != nil {
		return x.noSpace(err)
	}
	x.Lease, x.Tip = next, tip
	return nil
}

// nextRecord is the record that follows x's, in state, changed by mutate,
// and the files of its log entry: lease.json, and findings.json whenever
// the findings change, so that it always holds the record's. Its reason,
// often an error's text, is made free of host paths.
func (x *Execution) nextRecord(state State, mutate func(*Lease), files map[string][]byte) (*Lease, map[string][]byte) {
	next := *x.Lease
	if mutate != nil {
		mutate(&next)
	}
	next.State, next.Reason = state, x.hostFree(next.Reason)
	next.Seq++
	next.UpdatedAt = x.Repo.Now()
	if files == nil {
		files = map[string][]byte{}
	}
	if len(next.Findings) != len(x.Lease.Findings) || next.FindingsOmitted != x.Lease.FindingsOmitted {
		files[findingsFile] = marshalFindings(next.Findings)
	}
	files[recordFile] = next.marshal()
	return &next, files
}

// oneLine makes an agent's text (a reason, a blocked agent's question) a
// single line for the log's trailers and the record: terminal controls
// become spaces, since git log prints them raw.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if escape.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Worktree is the review worktree's path. It is derived from the ID and
// never stored in the log.
func (x *Execution) Worktree() string {
	return x.Repo.LeaseDir("worktrees", string(x.Lease.ID))
}

// RunDir is the lease's local runtime directory (output, sandbox state).
func (x *Execution) RunDir() string {
	return x.Repo.LeaseDir("runs", string(x.Lease.ID))
}

// maxPatch bounds how much of a stored patch git-lease reads back.
const maxPatch = 1 << 30

// Patch returns the lease's canonical patch from its log.
func (x *Execution) Patch() ([]byte, error) {
	if x.Lease.Result == nil {
		return nil, fmt.Errorf("lease %s has no result yet (it is %s)", x.Lease.ID, x.Lease.State)
	}
	return x.Repo.ReadFile(x.Tip, patchFile, maxPatch)
}

// Output returns the agent's output: the live local file while the agent
// runs, else the bounded copy kept in the log.
func (x *Execution) Output() ([]byte, error) {
	if x.Lease.State == Running {
		if b, _, err := readHeadTail(filepath.Join(x.RunDir(), "agent.log")); err == nil && b != nil {
			return b, nil
		}
	}
	b, err := x.Repo.ReadFile(x.Tip, outputFile, maxStoredLog*2)
	if errors.Is(err, refs.ErrNoFile) {
		return nil, nil
	}
	return b, err
}

// CheckLog returns the bounded log of check n (from 1) from the lease log.
func (x *Execution) CheckLog(n int) ([]byte, error) {
	if x.Lease.Result == nil || n < 1 || n > len(x.Lease.Result.Checks) {
		return nil, fmt.Errorf("lease %s has no check %d", x.Lease.ID, n)
	}
	return x.Repo.ReadFile(x.Tip, x.Lease.Result.Checks[n-1].Log, maxStoredLog*2)
}

// ErrNoSpace is wrapped by a failure to write for lack of disk space.
var ErrNoSpace = errors.New("no space left on device")

// noSpace makes a write that failed for lack of disk space say so, and
// what to do: nothing was recorded, and what the lease had (the agent's
// work in its sandbox) stays where it was. Other errors pass unchanged.
func (x *Execution) noSpace(err error) error {
	if !outOfSpace(err) || errors.Is(err, ErrNoSpace) {
		return err
	}
	return fmt.Errorf("lease %s: %w (%v): it stays %s, its agent's work kept on disk: free disk space, then run git lease reconcile (or the command again)", x.Lease.ID, ErrNoSpace, err, x.Lease.State)
}

// outOfSpace reports whether err comes from a full disk or quota: an errno,
// or git's own message for one.
func outOfSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrNoSpace) ||
		strings.Contains(err.Error(), "No space left on device") || strings.Contains(err.Error(), "Disk quota exceeded")
}
