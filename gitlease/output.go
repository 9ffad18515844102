package gitlease

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxStoredLog bounds each log kept in the lease log (agent output, check
// logs): the log is pushed to teammates, so it keeps the head and the tail.
const maxStoredLog = 64 << 10

// headTail keeps the first and last halves of max bytes of b and replaces
// the middle with a line that counts what was left out.
func headTail(b []byte, max int) []byte {
	if len(b) <= max {
		return b
	}
	half := max / 2
	out := append([]byte{}, b[:half]...)
	out = append(out, fmt.Sprintf("\n[… %d bytes elided by git-lease …]\n", len(b)-2*half)...)
	return append(out, b[len(b)-half:]...)
}

// readHeadTail reads a local log file and bounds it for the lease log.
func readHeadTail(path string) ([]byte, int64, error) {
	f, err := openRegular(path)
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := st.Size()
	if size <= maxStoredLog {
		b, err := io.ReadAll(f)
		return b, size, err
	}
	half := int64(maxStoredLog / 2)
	head := make([]byte, half)
	tail := make([]byte, half)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, 0, err
	}
	if _, err := f.ReadAt(tail, size-half); err != nil {
		return nil, 0, err
	}
	out := append(head, fmt.Sprintf("\n[… %d bytes elided by git-lease …]\n", size-2*half)...)
	return append(out, tail...), size, nil
}

// openRegular opens a file of the lease's run directory for reading, only
// when it is a regular file, never through a symlink at its end and
// without waiting for a FIFO's writer: a trusted_local agent knows that
// directory (it holds $LEASE_STATE_FILE) and can put anything there.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	return f, nil
}
