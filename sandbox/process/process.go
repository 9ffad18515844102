// Package process names a process by its PID and start time, so that a
// signal, a wait or a liveness check never reaches another process that
// reused the PID; and keeps the record of a lease's runner process
// (runner.json in its run directory), which every supervisor and the
// lifecycle read.
package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Record is a process: its PID and its start time (clock ticks since boot).
type Record struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
}

// Of is the record of the running process pid.
func Of(pid int) (Record, error) {
	st, err := StartTime(pid)
	return Record{pid, st}, err
}

// Alive reports whether the process runs; a zombie or a reused PID does not.
func (r Record) Alive() bool { return Alive(r.PID, r.StartTime) }

// Signal sends sig to the process if it is still the one recorded.
func (r Record) Signal(sig syscall.Signal) error {
	if !r.Alive() {
		return fmt.Errorf("process %d is not running", r.PID)
	}
	return syscall.Kill(r.PID, sig)
}

// RunnerFile, in a lease's run directory, records its runner process: a
// local detail that stays out of the lease log.
const RunnerFile = "runner.json"

// WriteRunner records pid as the runner of the lease whose run directory
// is dir.
func WriteRunner(dir string, pid int) error {
	r, err := Of(pid)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(r)
	return os.WriteFile(filepath.Join(dir, RunnerFile), b, 0o600)
}

// Runner reads the runner recorded in dir and reports whether it still
// runs. ok is false when none is recorded.
func Runner(dir string) (r Record, ok, alive bool) {
	b, err := os.ReadFile(filepath.Join(dir, RunnerFile))
	if err != nil || json.Unmarshal(b, &r) != nil || r.PID <= 0 {
		return r, false, false
	}
	return r, true, r.Alive()
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
	if !Alive(pid, start) {
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

// Alive reports whether pid runs and started at start; a zombie does not
// count.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) <= i+2 || s[i+2] == 'Z' {
		return false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return false
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	return err == nil && st == start
}
