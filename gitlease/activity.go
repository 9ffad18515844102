package gitlease

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// maxStateRead is how much of the agent's state file the runner reads:
// the state and its question (parseState keeps 500 bytes of it) fit many
// times over, and a file of any size costs the host this much.
const maxStateRead = 4 << 10

// readState reads the start of the agent's state file, which the agent
// writes and a trusted_local agent can replace: only a regular file (see
// openRegular), and only its first maxStateRead bytes. Anything else is
// nothing said (nil). A sandbox that keeps the file inside
// (sandbox.SharedFiles) is read there.
func readState(proc sandbox.Process, path string) []byte {
	if shared, ok := proc.(sandbox.SharedFiles); ok {
		return shared.ReadShared(stateInSandbox, maxStateRead)
	}
	f, err := openRegular(path)
	if err != nil {
		return nil
	}
	defer f.Close()
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

// Bounds on the activity events that the agent's state file makes the
// runner record. Each is a signed commit of a log that is pushed to the
// team, and the agent decides when its state changes.
const (
	// activityInterval is the least time between two activity events: an
	// agent flipping between working and blocked costs at most a commit a
	// second, and a state that lasts long enough for anyone to act on is
	// still recorded. Changes in between coalesce into the latest.
	activityInterval = time.Second
	// maxActivityEvents caps a lease's activity events, its first working
	// included: a real agent blocks a few dozen times in a long task, while
	// one that flips once a second for the default 30 minutes would make
	// 1,800. The last one, activity-capped, says that later changes are
	// only counted.
	maxActivityEvents = 200
)

// activityPacer decides which changes of the agent's state the runner
// records, and counts those it saw and did not record. States are
// compared as "state:message".
type activityPacer struct {
	seen     string    // the state last seen
	recorded string    // the state last recorded
	at       time.Time // when the last activity event was recorded
	events   int       // activity events recorded
	changes  int       // changes seen
	kept     int       // changes recorded
}

// What the pacer makes of a state.
const (
	skipActivity   = iota // nothing to record
	recordActivity        // an event named after the state
	capActivity           // the last event: activity-capped
)

// newActivityPacer starts where the runner starts: working, recorded at now.
func newActivityPacer(now time.Time) *activityPacer {
	working := sandbox.StateWorking + ":"
	return &activityPacer{seen: working, recorded: working, at: now, events: 1}
}

// next says what to record of state, seen at now. final is the look after
// the agent ended: its last state is recorded however soon it came.
func (p *activityPacer) next(now time.Time, state string, final bool) int {
	if state != p.seen {
		p.seen = state
		p.changes++
	}
	if state == p.recorded || p.events >= maxActivityEvents || !final && now.Sub(p.at) < activityInterval {
		return skipActivity
	}
	p.recorded, p.at = state, now
	p.events++
	p.kept++
	if p.events == maxActivityEvents {
		return capActivity
	}
	return recordActivity
}

// unrecorded counts the changes seen and not recorded: coalesced into a
// later state, or past the cap.
func (p *activityPacer) unrecorded() int { return p.changes - p.kept }

// noteActivity reads the agent's state file and records the state when
// the pacer says so.
func (x *Execution) noteActivity(ctx context.Context, sup sandbox.Supervisor, e sandbox.Endpoint, p *activityPacer, proc sandbox.Process, final bool) {
	b := readState(proc, x.statePath())
	if len(bytes.TrimSpace(b)) == 0 {
		return // nothing said yet, or caught between truncate and write
	}
	state, msg := parseState(b)
	switch p.next(time.Now(), state+":"+msg, final) {
	case recordActivity:
		x.activity(ctx, sup, e, state, state, msg, p.unrecorded())
	case capActivity:
		x.activity(ctx, sup, e, "activity-capped", state, msg, p.unrecorded())
	}
}

// activity records the agent's state in the log (an event, named after
// the state but for the last one the cap allows) with the count of
// changes not recorded, and tells the supervisor. Failures to tell are
// not fatal: the log is the record.
func (x *Execution) activity(ctx context.Context, sup sandbox.Supervisor, e sandbox.Endpoint, event, state, message string, unrecorded int) {
	a := &Activity{State: state, Message: oneLine(message), Since: x.Repo.Now()}
	x.Event(ctx, event, func(l *Lease) { l.Activity, l.ActivityUnrecorded = a, unrecorded }, nil)
	if sup != nil {
		sup.Report(ctx, e, state, a.Message) // Herdr shows it in its terminal too
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
