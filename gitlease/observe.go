package gitlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// ErrTimeout is returned by Wait when the lease is still running at its
// deadline; the lease goes on.
var ErrTimeout = errors.New("the lease is still running")

// Wait blocks until the lease is settled (its runner has collected the
// result) or timeout passes (0: no timeout), and returns the settled lease.
// It asks a live runner to record that someone reconnected to it; a lease
// whose runner is gone is reported, for reconcile to repair.
func Wait(ctx context.Context, x *Execution, timeout time.Duration) error {
	if !x.Lease.State.Settled() {
		x.signalRunner()
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	var watch *sandbox.EndpointWatch
	if sup, err := x.supervisorOf(); err == nil {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		watch = sandbox.WatchEndpoint(ctx, sup, *x.Lease.Supervisor)
	}
	for {
		y, err := Load(x.Repo, x.Lease.ID)
		if err != nil {
			return err
		}
		*x = *y
		if x.Lease.State.Settled() {
			return nil
		}
		if x.StartedElsewhere() {
			return x.startedElsewhere("wait for it")
		}
		if !x.Busy() && (x.Lease.State != Provisioning || watch.Due()) {
			gone, why := x.endpointGone(ctx)
			if !gone && x.Lease.State != Provisioning {
				why = "its runner stopped working on it"
			}
			if gone || x.Lease.State != Provisioning {
				return fmt.Errorf("lease %s is %s but nothing runs it (%s): run git lease reconcile", x.Lease.ID, x.Lease.State, why)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("lease %s: %w (%s)", x.Lease.ID, ErrTimeout, x.Lease.State)
		case _, ok := <-watch.Pushed():
			watch.Note(ok)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Follow copies the agent's output to w as it is written, until the lease
// is settled.
func Follow(ctx context.Context, x *Execution, w io.Writer) error {
	var offset int64
	for {
		if f, err := os.Open(filepath.Join(x.RunDir(), "agent.log")); err == nil {
			f.Seek(offset, io.SeekStart)
			n, _ := io.Copy(w, f)
			offset += n
			f.Close()
		}
		y, err := Load(x.Repo, x.Lease.ID)
		if err != nil {
			return err
		}
		*x = *y
		if x.Lease.State.Settled() || (x.Lease.State != Provisioning && x.Lease.State != Running) {
			if offset == 0 {
				out, err := x.Output()
				if err != nil {
					return err
				}
				w.Write(out)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Cancel asks a running lease's runner to stop its agent: a graceful
// interrupt, then a kill of the whole sandbox after grace. The lease ends
// canceled, its partial delta kept for collect --partial. It returns once
// the lease is settled.
func Cancel(ctx context.Context, x *Execution, grace time.Duration) error {
	if x.Lease.State != Running && x.Lease.State != Provisioning {
		return fmt.Errorf("lease %s is %s: only a running lease can be canceled", x.Lease.ID, x.Lease.State)
	}
	if x.StartedElsewhere() {
		return x.startedElsewhere("cancel it")
	}
	sup, err := x.supervisorOf()
	if err != nil {
		return err
	}
	os.WriteFile(filepath.Join(x.RunDir(), "cancel"), []byte(fmt.Sprint(int(grace.Seconds()))), 0o600)
	if err := sup.Interrupt(ctx, *x.Lease.Supervisor); err != nil {
		return fmt.Errorf("lease %s: %w", x.Lease.ID, err)
	}
	return Wait(ctx, x, grace+30*time.Second)
}

// Attach brings the lease's supervisor endpoint to the user (a Herdr pane
// is focused); only the user's own git lease attach calls it.
func Attach(ctx context.Context, x *Execution) error {
	if x.StartedElsewhere() {
		return x.startedElsewhere("attach to it")
	}
	sup, err := x.supervisorOf()
	if err != nil {
		return err
	}
	return sup.Attach(ctx, *x.Lease.Supervisor)
}

// CollectPartial collects what a canceled or failed agent left, on the
// user's request: the sandbox's delta is collected again, verified and
// signed like any result, and goes to review, checked out only into the
// lease's review worktree. The agent's record stays as it ended. It
// refuses when the delta is gone (cleaned up), and when a person's files in
// the review worktree would be overwritten.
func CollectPartial(ctx context.Context, x *Execution, progress io.Writer) error {
	if x.Lease.State != Canceled && x.Lease.State != Failed {
		return fmt.Errorf("lease %s is %s: collect --partial is for canceled and failed leases", x.Lease.ID, x.Lease.State)
	}
	if x.StartedElsewhere() {
		return x.startedElsewhere("collect it")
	}
	if x.ReadOnly() {
		return fmt.Errorf("lease %s: %w", x.Lease.ID, ErrNewerRecord)
	}
	if _, err := Signing(x.Repo, progress); err != nil {
		return err
	}
	unlock, err := x.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	provider, err := providerByName(x.Lease.Provider, x.Lease.Policy)
	if err != nil {
		return err
	}
	d, err := x.collectDelta(ctx, provider, x.spec())
	if err != nil {
		return fmt.Errorf("lease %s: its partial delta cannot be collected: %w", x.Lease.ID, err)
	}
	if _, err := os.Lstat(d.Root); err != nil {
		return fmt.Errorf("lease %s: its partial delta is gone (cleaned up?): %w", x.Lease.ID, err)
	}
	if expected, ok := x.worktreeExpected(); ok && !x.agentWroteWorktree() {
		e, err := x.worktreeEdits(ctx, expected)
		if err != nil {
			return fmt.Errorf("lease %s: its review worktree: %w", x.Lease.ID, err)
		}
		if e != nil {
			return fmt.Errorf("lease %s: its review worktree %s holds files the lease did not put there (%d paths, first %s): move them away, then collect again", x.Lease.ID, x.Worktree(), len(e.paths), e.paths[0])
		}
	}
	why := x.Lease.Reason
	if why == "" {
		why = string(x.Lease.State)
	}
	if err := x.Move(ctx, Collecting, func(l *Lease) {
		l.PartialCollect = true
		l.Reason = why + "; what the agent left was collected on request (collect --partial)"
	}, nil); err != nil {
		return err
	}
	return x.collectAndVerify(ctx, d, progress)
}
