// Package headless is the embedded default supervisor: the lease's runner
// is a background process in its own session, found again by its PID and
// start time.
package headless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// Supervisor starts runners as detached processes. Dir is the lease's run
// directory: the runner's own output goes to Dir/runner.log (the agent's
// has its own log), and Dir/runner.json names the runner's process (PID
// and start time), a local detail that stays out of the lease log.
type Supervisor struct {
	Dir string
}

// Runner is the runner.json record of a runner process.
type Runner struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
}

// RecordRunner writes runner.json for the process pid.
func (s Supervisor) RecordRunner(pid int) error {
	st, err := StartTime(pid)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(Runner{pid, st})
	return os.WriteFile(filepath.Join(s.Dir, "runner.json"), b, 0o600)
}

// runner reads runner.json and reports whether that process still runs.
func (s Supervisor) runner() (Runner, bool) {
	var r Runner
	b, err := os.ReadFile(filepath.Join(s.Dir, "runner.json"))
	if err != nil || json.Unmarshal(b, &r) != nil {
		return r, false
	}
	return r, ProcessAlive(r.PID, r.StartTime)
}

// Name is "headless".
func (Supervisor) Name() string { return "headless" }

// Check succeeds: a process is all headless needs.
func (Supervisor) Check(context.Context) error { return nil }

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
	if err := s.RecordRunner(cmd.Process.Pid); err != nil {
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
	_, alive := s.runner()
	return alive, nil
}

// Report does nothing: the lease log is the only record of a headless
// agent's state.
func (Supervisor) Report(context.Context, sandbox.Endpoint, string, string) error { return nil }

// Interrupt sends the runner SIGTERM, which it turns into a graceful cancel.
func (s Supervisor) Interrupt(context.Context, sandbox.Endpoint) error {
	r, alive := s.runner()
	if !alive {
		return errors.New("its runner is not running")
	}
	return syscall.Kill(r.PID, syscall.SIGTERM)
}

// Signal sends the live runner sig (SIGUSR1 asks it to record that someone
// reconnected).
func (s Supervisor) Signal(sig syscall.Signal) bool {
	r, alive := s.runner()
	return alive && syscall.Kill(r.PID, sig) == nil
}

// Close kills the runner (and with it the sandbox) and waits for it to go.
func (s Supervisor) Close(context.Context, sandbox.Endpoint) error {
	r, alive := s.runner()
	if !alive {
		return nil
	}
	if _, err := Stop(r.PID, r.StartTime, 2*time.Second); err != nil {
		return fmt.Errorf("the runner (pid %d) did not exit: %w", r.PID, err)
	}
	return nil
}

// Stop kills the process pid that started at start (SIGKILL) and waits,
// up to timeout, until it has exited, through a pidfd: the signal cannot
// reach a process that reused the PID, and the wait needs no polling.
// alive says whether it was running; a process already gone (or a zombie)
// is not an error.
func Stop(pid int, start uint64, timeout time.Duration) (alive bool, err error) {
	if pid <= 0 {
		return false, nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false, nil // no such process
	}
	defer unix.Close(fd)
	// The pidfd names the process that had pid when it was opened: if that
	// one started at start, the signal and the wait are about it.
	if !ProcessAlive(pid, start) {
		return false, nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && err != unix.ESRCH {
		return true, err
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for {
		n, err := unix.Poll(fds, int(max(0, time.Until(deadline).Milliseconds())))
		switch {
		case n > 0:
			return true, nil
		case err == unix.EINTR:
			continue
		case err != nil:
			return true, err
		}
		return true, fmt.Errorf("still running %s after SIGKILL", timeout)
	}
}

// Attach has nothing to bring forward: follow the output with git lease
// logs --follow instead.
func (Supervisor) Attach(context.Context, sandbox.Endpoint) error {
	return fmt.Errorf("%w: a headless lease has no pane; follow it with git lease logs --follow", sandbox.ErrNoAttach)
}

// StartTime reads a process's start time (clock ticks since boot) from
// /proc/<pid>/stat.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("short /proc stat")
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 of stat
}

// ProcessAlive reports whether pid runs and started at start; a zombie
// does not count.
func ProcessAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := StartTime(pid)
	if err != nil || st != start {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z'
}
