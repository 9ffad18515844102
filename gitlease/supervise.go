package gitlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/headless"
	"github.com/git-lease/git-lease/sandbox/herdr"
)

// RunnerArg is the hidden command with which a supervisor starts
// git-lease as a lease's runner: git-lease __run <id>.
const RunnerArg = "__run"

// supervisorFor returns the named supervisor (default: git config
// lease.supervisor, else headless). runDir is the lease's run directory,
// where a headless runner logs; "" while only checking.
func supervisorFor(repo *refs.Repo, name, runDir string) (sandbox.Supervisor, error) {
	if name == "" {
		name = gitConfig(repo, "lease.supervisor")
	}
	switch name {
	case "", "headless":
		return headless.Supervisor{Dir: runDir}, nil
	case "herdr":
		return herdr.NewSupervisor(gitConfig(repo, "lease.herdrSession"), "git-lease", runDir)
	}
	return nil, fmt.Errorf("unknown supervisor %q: use headless or herdr", name)
}

func startPrompt(opts StartOptions) *Prompt {
	if opts.Prompt == "" && !opts.TTY {
		return nil
	}
	return promptRecord(opts.Prompt, opts.PrivatePrompt, opts.TTY)
}

// handOff starts the lease's runner under its supervisor and binds the
// endpoint in the log before the runner takes over.
func (x *Execution) handOff(ctx context.Context, sup sandbox.Supervisor) error {
	self, err := os.Executable()
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	e, err := sup.Start(ctx, string(x.Lease.ID), []string{self, RunnerArg, string(x.Lease.ID)}, x.Repo.WorkTree, os.Environ())
	if err != nil {
		return x.fail(ctx, fmt.Sprintf("supervisor %s: %v", sup.Name(), err), err)
	}
	return x.Event(ctx, "supervisor-bound", func(l *Lease) { l.Supervisor = &e }, nil)
}

// awaitRunner waits until the runner has taken the lease over (it is
// running), or, with untilSettled, until the lease is settled.
func (x *Execution) awaitRunner(ctx context.Context, sup sandbox.Supervisor, untilSettled bool, progress io.Writer) error {
	deadline := time.Now().Add(60 * time.Second)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	watch := sandbox.WatchEndpoint(ctx, sup, *x.Lease.Supervisor)
	for {
		y, err := Load(x.Repo, x.Lease.ID)
		if err != nil {
			return err
		}
		*x = *y
		switch {
		case x.Lease.State.Settled():
			return nil
		case x.Lease.State != Provisioning && !untilSettled:
			fmt.Fprintf(progress, "lease %s: running under %s; git lease wait %s collects it\n", x.Lease.ID, sup.Name(), x.Lease.ID.Short())
			return nil
		case x.Lease.State == Provisioning && time.Now().After(deadline):
			return fmt.Errorf("lease %s: the runner did not start within 60s (see %s)", x.Lease.ID, filepath.Join(x.RunDir(), "runner.log"))
		}
		if !x.Busy() && (x.Lease.State != Provisioning || watch.Due()) {
			if alive, _ := sup.Alive(ctx, *x.Lease.Supervisor); !alive || x.Lease.State != Provisioning {
				return fmt.Errorf("lease %s is %s, but its runner stopped working on it: run git lease reconcile (runner log: %s)",
					x.Lease.ID, x.Lease.State, filepath.Join(x.RunDir(), "runner.log"))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-watch.Pushed():
			watch.Note(ok)
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// RunLease is the runner: the process a supervisor starts to run a
// provisioned lease's agent to its result. It takes the lease's work lock
// from the command that started it.
func RunLease(ctx context.Context, repo *refs.Repo, id refs.ID, live, progress io.Writer) (*Execution, error) {
	if _, err := Signing(repo, progress); err != nil {
		return nil, err
	}
	x, err := Load(repo, id)
	if err != nil {
		return nil, err
	}
	var unlock func()
	for i := 0; ; i++ {
		if unlock, err = x.Lock(); err == nil || !errors.Is(err, ErrBusy) || i == 300 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return x, err
	}
	defer unlock()
	if x, err = Load(repo, id); err != nil {
		return nil, err
	}
	if x.Lease.State != Provisioning || x.Lease.Supervisor == nil {
		return x, fmt.Errorf("lease %s is %s: there is nothing for a runner to do", id, x.Lease.State)
	}
	provider, err := providerByName(x.Lease.Provider, x.Lease.Policy)
	if err != nil {
		return x, err
	}
	sup, err := supervisorFor(repo, x.Lease.Supervisor.Supervisor, x.RunDir())
	if err != nil {
		return x, err
	}
	return x, x.runAgent(ctx, provider, sup, *x.Lease.Supervisor, live, progress)
}

// supervisorOf is the supervisor that runs an existing lease.
func (x *Execution) supervisorOf() (sandbox.Supervisor, error) {
	if x.Lease.Supervisor == nil {
		return nil, fmt.Errorf("lease %s has no supervisor endpoint", x.Lease.ID)
	}
	return supervisorFor(x.Repo, x.Lease.Supervisor.Supervisor, x.RunDir())
}

// endpointGone says, for reconcile, whether a lease's runner is gone and
// why; an endpoint that is still alive (a runner taking the lease over)
// is not gone.
func (x *Execution) endpointGone(ctx context.Context) (gone bool, why string) {
	if x.Lease.Supervisor == nil {
		return true, ""
	}
	sup, err := x.supervisorOf()
	if err != nil {
		return true, err.Error()
	}
	alive, err := sup.Alive(ctx, *x.Lease.Supervisor)
	if alive {
		return false, ""
	}
	if x.Lease.Supervisor.Supervisor == "herdr" {
		return true, "its herdr pane " + x.Lease.Supervisor.PaneID + " is gone or runs another terminal (herdr restarted?)"
	}
	if err != nil {
		return true, err.Error()
	}
	return true, "its runner is not running"
}
