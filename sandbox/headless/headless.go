// Package headless is the embedded default supervisor: the lease's runner
// is a background process in its own session, found again by its PID and
// start time.
package headless

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/process"
)

// Supervisor starts runners as detached processes. Dir is the lease's run
// directory: the runner's own output goes to Dir/runner.log (the agent's
// has its own log), and Dir/runner.json names the runner's process
// (process.WriteRunner).
type Supervisor struct {
	Dir string
}

// Name is "headless".
func (Supervisor) Name() string { return "headless" }

// Check succeeds: a process is all headless needs.
func (Supervisor) Check(context.Context) error { return nil }

// AsAgent is s: a headless runner shows nobody what agent it runs.
func (s Supervisor) AsAgent(string) sandbox.Supervisor { return s }

// Start starts argv in its own session with no terminal; the runner
// survives the command that started it.
func (s Supervisor) Start(ctx context.Context, id string, argv []string, dir string, env []string) (sandbox.Endpoint, error) {
	out, err := os.OpenFile(filepath.Join(s.Dir, "runner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return sandbox.Endpoint{}, err
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return sandbox.Endpoint{}, fmt.Errorf("start the runner: %w", err)
	}
	go cmd.Wait() // reap it if it ends while this process still runs
	if err := process.WriteRunner(s.Dir, cmd.Process.Pid); err != nil {
		return sandbox.Endpoint{}, err
	}
	return s.Endpoint(id), nil
}

// Endpoint is a headless runner's public identity: its label.
func (s Supervisor) Endpoint(id string) sandbox.Endpoint {
	return sandbox.Endpoint{Supervisor: "headless", Label: "lease:" + id}
}

// Alive reports whether the runner process still runs (not a reused PID).
func (s Supervisor) Alive(context.Context, sandbox.Endpoint) (bool, error) {
	_, _, alive := process.Runner(s.Dir)
	return alive, nil
}

// Report does nothing: the lease log is the only record of a headless
// agent's state.
func (Supervisor) Report(context.Context, sandbox.Endpoint, string, string) error { return nil }

// Interrupt sends the runner SIGTERM, which it turns into a graceful cancel.
func (s Supervisor) Interrupt(context.Context, sandbox.Endpoint) error {
	r, _, alive := process.Runner(s.Dir)
	if !alive {
		return errors.New("its runner is not running")
	}
	return r.Signal(syscall.SIGTERM)
}

// Close kills the runner (and with it the sandbox) and waits for it to go.
func (s Supervisor) Close(context.Context, sandbox.Endpoint) error {
	r, _, alive := process.Runner(s.Dir)
	if !alive {
		return nil
	}
	if _, err := process.Stop(r.PID, r.StartTime, 2*time.Second); err != nil {
		return fmt.Errorf("the runner (pid %d) did not exit: %w", r.PID, err)
	}
	return nil
}

// Attach has nothing to bring forward: follow the output with git lease
// logs --follow instead.
func (Supervisor) Attach(context.Context, sandbox.Endpoint) error {
	return fmt.Errorf("%w: a headless lease has no pane; follow it with git lease logs --follow", sandbox.ErrNoAttach)
}
