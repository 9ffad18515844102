package sandbox

import (
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseOnExec marks every open descriptor above standard error, but keep,
// close-on-exec, so that no program git-lease starts inherits one that
// git-lease itself inherited (from an orchestrator, an IDE terminal, make)
// without the flag. It is idempotent.
func CloseOnExec(keep ...int) error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 || slices.Contains(keep, fd) {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return err // EBADF: the directory's own descriptor, closed by now
		}
	}
	return nil
}
