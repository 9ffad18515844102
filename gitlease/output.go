package gitlease

import (
	"fmt"
	"io"
	"os"
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
	f, err := os.Open(path)
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
