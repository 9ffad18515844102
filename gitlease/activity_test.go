package gitlease

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// runLocal runs script under bash in a trusted_local lease (the agent has
// the host path of its state file, so it can replace it) and returns the
// lease, however it ended, and the agent's output. A lease that has not
// finished within a minute fails the test (its runner is left stuck).
func runLocal(t *testing.T, repo *refs.Repo, script string) (*Execution, string) {
	t.Helper()
	type result struct {
		x   *Execution
		err error
	}
	var out bytes.Buffer
	done := make(chan result, 1)
	go func() {
		x, err := Start(context.Background(), repo, StartOptions{Mode: TrustedLocal, Command: []string{"bash", "-c", script}, Output: &out})
		done <- result{x, err}
	}()
	select {
	case r := <-done:
		if r.x == nil {
			t.Fatalf("start: %v\n%s", r.err, out.String())
		}
		return r.x, out.String()
	case <-time.After(time.Minute):
		t.Fatalf("the lease did not finish within a minute")
	}
	return nil, ""
}

// logEvents lists the Lease-Event trailers of a lease's log, oldest first.
func logEvents(t *testing.T, dir string, id refs.ID) []string {
	t.Helper()
	out := refstest.Git(t, dir, "log", "--reverse", "--format=%(trailers:key=Lease-Event,valueonly)", "refs/leases/"+string(id))
	return strings.Fields(out)
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestStateFileReadIsBounded reads a state file that is huge, a FIFO with
// no writer, and a symlink: only the first 4 KiB of a regular file is ever
// read, and the rest are nothing said, at once.
func TestStateFileReadIsBounded(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge")
	must(t, os.WriteFile(huge, []byte("blocked: big\n"), 0o644))
	must(t, os.Truncate(huge, 100<<20))
	if b := readState(nil, huge); len(b) != maxStateRead {
		t.Fatalf("read %d bytes of a 100 MiB state file, want %d", len(b), maxStateRead)
	} else if state, msg := parseState(b); state != "blocked" || msg != "big" {
		t.Fatalf("parsed %q %q", state, msg)
	}
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	began := time.Now()
	if b := readState(nil, fifo); b != nil || time.Since(began) > time.Second {
		t.Fatalf("a FIFO read %q in %s", b, time.Since(began))
	}
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(huge, link))
	if b := readState(nil, link); b != nil {
		t.Fatalf("read %d bytes through a symlink", len(b))
	}
}

// TestAgentStateFileCannotFloodOrBlockTheRunner is an agent that makes its
// state file 100 MiB, replaces it with a FIFO, or with a symlink to a file
// it wrote elsewhere. The lease finishes each time, the runner's memory
// stays small, and what the symlink points at is never read.
func TestAgentStateFileCannotFloodOrBlockTheRunner(t *testing.T) {
	t.Run("100 MiB", func(t *testing.T) {
		repo, dir := sandboxRepo(t, map[string]string{"a": "a"}, "")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		x, out := runLocal(t, repo, `echo "blocked: big" > "$LEASE_STATE_FILE"; truncate -s 100M "$LEASE_STATE_FILE"; sleep 2`)
		runtime.ReadMemStats(&after)
		if x.Lease.State != Review {
			t.Fatalf("state %s (%s)\n%s", x.Lease.State, x.Lease.Reason, out)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
			t.Fatalf("the lease allocated %d MiB on the host", got>>20)
		}
		if events := logEvents(t, dir, x.Lease.ID); count(events, "blocked") != 1 {
			t.Fatalf("the state at the start of the file was not recorded once: %v", events)
		}
	})
	t.Run("FIFO", func(t *testing.T) {
		repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
		x, out := runLocal(t, repo, `rm "$LEASE_STATE_FILE"; mkfifo "$LEASE_STATE_FILE"; sleep 2`)
		if x.Lease.State != Review {
			t.Fatalf("state %s (%s)\n%s", x.Lease.State, x.Lease.Reason, out)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		repo, dir := sandboxRepo(t, map[string]string{"a": "a"}, "")
		x, out := runLocal(t, repo, `elsewhere="$(dirname "$LEASE_STATE_FILE")/elsewhere"; echo "blocked: read through a symlink" > "$elsewhere"; `+
			`ln -sf "$elsewhere" "$LEASE_STATE_FILE"; sleep 2`)
		if x.Lease.State != Review {
			t.Fatalf("state %s (%s)\n%s", x.Lease.State, x.Lease.Reason, out)
		}
		if events := logEvents(t, dir, x.Lease.ID); count(events, "blocked") != 0 {
			t.Fatalf("the runner read the symlink's target: %v", events)
		}
	})
}

// TestAgentLogReplacedByAFIFODoesNotBlockTheRunner is a trusted_local
// agent that puts a FIFO where the runner reads its output from: the lease
// ends failed, saying so, instead of waiting for a writer for ever.
func TestAgentLogReplacedByAFIFODoesNotBlockTheRunner(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	x, out := runLocal(t, repo, `log="$(dirname "$LEASE_STATE_FILE")/agent.log"; rm "$log"; mkfifo "$log"`)
	if x.Lease.State != Failed || !strings.Contains(x.Lease.Reason, "agent.log is not a regular file") {
		t.Fatalf("state %s (%s)\n%s", x.Lease.State, x.Lease.Reason, out)
	}
}

// TestActivityPacer flips an agent's state 10,000 times: every 10 ms, the
// pacer records one state a second, the latest; every 2 s, it records
// until the cap, whose last event is activity-capped, then only counts.
func TestActivityPacer(t *testing.T) {
	flip := func(i int) string {
		if i%2 == 0 {
			return "blocked:question " + strconv.Itoa(i)
		}
		return "working:"
	}
	run := func(step time.Duration) (p *activityPacer, recorded []string, capped int) {
		start := time.Now()
		p = newActivityPacer(start)
		for i := range 10000 {
			switch p.next(start.Add(time.Duration(i+1)*step), flip(i), i == 9999) {
			case recordActivity:
				recorded = append(recorded, flip(i))
			case capActivity:
				capped++
			}
		}
		return p, recorded, capped
	}
	p, recorded, capped := run(10 * time.Millisecond) // 100 s
	if len(recorded) > 101 || len(recorded) < 90 || capped != 0 {
		t.Fatalf("every 10 ms for 100 s: %d recorded, %d capped; want one a second", len(recorded), capped)
	}
	if recorded[0] != flip(100) { // flip(99), at 1 s, is working as recorded
		t.Fatalf("the first look after a second recorded %q, not the state then %q", recorded[0], flip(100))
	}
	if p.unrecorded() != 10000-len(recorded) {
		t.Fatalf("unrecorded %d, want %d", p.unrecorded(), 10000-len(recorded))
	}
	p, recorded, capped = run(2 * time.Second)
	if events := 1 + len(recorded) + capped; events != maxActivityEvents || capped != 1 {
		t.Fatalf("every 2 s: %d activity events (%d capped), want %d with the last capped", events, capped, maxActivityEvents)
	}
	if want := 10000 - (maxActivityEvents - 1); p.unrecorded() != want {
		t.Fatalf("unrecorded %d, want %d", p.unrecorded(), want)
	}
}

// TestAgentFlippingItsStateCannotFloodTheLog is an agent that flips between
// blocked and working at least 10,000 times and for at least 5 seconds:
// its log gets at most one activity event a second (and the one the agent
// ended in), and the record counts the changes it left out.
func TestAgentFlippingItsStateCannotFloodTheLog(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"a": "a"}, "")
	began := time.Now()
	// 1<> writes over the start of the file without truncating it, so that
	// the runner always reads a whole first line.
	x, out := runLocal(t, repo, `end=$((SECONDS + 6)); i=0; while [ $i -lt 5000 ] || [ $SECONDS -lt $end ]; do `+
		`printf 'blocked: question %05d\n' $i 1<>"$LEASE_STATE_FILE"; echo working 1<>"$LEASE_STATE_FILE"; i=$((i + 1)); done`)
	took := time.Since(began)
	if x.Lease.State != Review {
		t.Fatalf("state %s (%s)\n%s", x.Lease.State, x.Lease.Reason, out)
	}
	events := logEvents(t, dir, x.Lease.ID)
	n := count(events, "working") + count(events, "blocked") + count(events, "activity-capped")
	if limit := 2 + int(took/time.Second); n > limit || n > maxActivityEvents {
		t.Fatalf("%d activity events in %s, want at most %d: %v", n, took, limit, events)
	}
	if x.Lease.ActivityUnrecorded == 0 {
		t.Fatalf("the record does not count the changes it left out: %v", events)
	}
	t.Logf("%d activity events in %s, %d changes seen and not recorded", n, took, x.Lease.ActivityUnrecorded)
}
