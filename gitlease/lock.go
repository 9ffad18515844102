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
