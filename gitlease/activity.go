package gitlease

import (
	"context"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// maxStateRead is how much of the agent's state file the runner reads:
// the state and its question (parseState keeps 500 bytes of it) fit many
// times over, and a file of any size costs the host this much.
const maxStateRead = 4 << 10

// readState reads the start of the agent's state file. The agent writes
// that file, and a trusted_local agent can replace it, so it is opened
// without following a symlink or waiting for a FIFO's writer, read only
// when it is a regular file, and only its first maxStateRead bytes.
// Anything else is nothing said (nil).
func readState(path string) []byte {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	b := make([]byte, maxStateRead)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// parseState reads the agent's state file: "blocked: question" or "working".
func parseState(b []byte) (state, message string) {
	line := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	state, message, _ = strings.Cut(line, ":")
	state, message = strings.TrimSpace(state), strings.TrimSpace(message)
	if state != sandbox.StateBlocked {
		return sandbox.StateWorking, ""
	}
	if len(message) > 500 {
		message = message[:500]
	}
	return state, message
}

// activity records the agent's state in the log (an event named after
// it) and tells the supervisor. Failures to tell are not fatal: the log is
// the record.
func (x *Execution) activity(ctx context.Context, sup sandbox.Supervisor, e sandbox.Endpoint, state, message string) {
	a := &Activity{State: state, Message: oneLine(message), Since: x.Repo.Now()}
	x.Event(ctx, state, func(l *Lease) { l.Activity = a }, nil)
	if sup != nil {
		sup.Report(ctx, e, state, message)
	}
}

// createStateFile creates the agent's empty state file, new (never
// through a symlink or over a file already there), writable by the agent:
// another uid in the sandbox.
func createStateFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(0o666) // past the umask
}
