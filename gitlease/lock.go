package gitlease

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrBusy is returned when another git-lease process is working on a lease.
var ErrBusy = errors.New("another git-lease process is working on this lease")

// Lock takes the lease's work lock, an flock on a local file that the
// process running, collecting, applying or cleaning up a lease holds for as
// long as it works on it. The kernel drops it when the process dies, so a
// free lock on an unfinished lease means its process crashed: reconcile
// repairs exactly those. Lock does not wait.
func (x *Execution) Lock() (unlock func(), err error) {
	if err := os.MkdirAll(x.RunDir(), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(x.RunDir(), "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lease %s: %w", x.Lease.ID, ErrBusy)
		}
		return nil, err
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { f.Close() }, nil
}

// startedMarker, in a lease's run directory, says that this clone started
// the lease: Move writes it with the lease's first log entry. Commands that
// take a fetched lease's work lock (apply, reject) make the directory but
// never the marker.
const startedMarker = "started"

// StartedElsewhere reports whether another clone started the lease, which
// then came here with git lease fetch: its sandbox, runner and worktree
// are there. The run directory, never pushed, holds the started marker in
// the clone that started the lease until its cleanup is confirmed. (A lease
// started before the marker existed has its agent's output file there.)
func (x *Execution) StartedElsewhere() bool {
	if c := x.Lease.Cleanup; c != nil && c.State == CleanupConfirmed {
		return false
	}
	for _, name := range []string{startedMarker, "agent.log"} {
		if _, err := os.Lstat(filepath.Join(x.RunDir(), name)); err == nil {
			return false
		}
	}
	return true
}

// startedElsewhere is the error for doing what only the clone that started
// the lease can do.
func (x *Execution) startedElsewhere(what string) error {
	return fmt.Errorf("lease %s was started in another clone and came here with git lease fetch: %s there", x.Lease.ID, what)
}

// Busy reports whether a live process holds the lease's work lock.
func (x *Execution) Busy() bool {
	f, err := os.OpenFile(filepath.Join(x.RunDir(), "lock"), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	return false
}
