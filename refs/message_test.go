package refs

import (
	"strings"
	"testing"
)

func TestMessagesParseBackAndRefuseWhatIsNotOne(t *testing.T) {
	id := ID("0123456789ab")
	msg, err := TransitionMessage(id, "running", "failed", "agent exited 3")
	if err != nil {
		t.Fatal(err)
	}
	if want := "lease 0123456789ab: running -> failed\n\nLease-ID: 0123456789ab\nLease-State: failed\nLease-Reason: agent exited 3\n"; msg != want {
		t.Fatalf("transition message:\n%s", msg)
	}
	if e, err := ParseEntry(msg); err != nil || e != (Entry{ID: id, From: "running", To: "failed"}) {
		t.Fatalf("parsed %+v, %v", e, err)
	}
	msg, err = EventMessage(id, "review", "cleanup-recorded")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := ParseEntry(msg); err != nil || e != (Entry{ID: id, From: "review", To: "review", Event: "cleanup-recorded"}) {
		t.Fatalf("parsed %+v, %v", e, err)
	}
	if msg, err := EventMessage(id, "running", "child-fedcba987654"); err != nil || !strings.HasPrefix(msg, "lease 0123456789ab: running: child-fedcba987654\n") {
		t.Fatalf("a child event: %q %v", msg, err)
	}
	for _, bad := range []func() error{
		func() error { _, err := TransitionMessage("0123", "running", "failed", ""); return err },
		func() error { _, err := TransitionMessage(id, "Running", "failed", ""); return err },
		func() error { _, err := TransitionMessage(id, "running", "failed", "two\nlines"); return err },
		func() error { _, err := EventMessage(id, "review", "no spaces"); return err },
		func() error { _, err := EventMessage(id, "review", "-dash"); return err },
	} {
		if bad() == nil {
			t.Errorf("a malformed message was written")
		}
	}
	for _, subject := range []string{
		"lease 0123456789ab: running -> ",
		"lease 0123456789ab: running",
		"lease 0123456789AB: running -> failed",
		"lease 0123456789ab: running -> failed extra",
		"lease 0123456789ab: review: two words",
		"Merge branch 'main'",
	} {
		if e, err := ParseEntry(subject); err == nil {
			t.Errorf("%q parsed as %+v", subject, e)
		}
	}
	if got := BranchMessage(id, "", "1 file changed:\n1 added", "abc", ""); !strings.HasPrefix(got, "lease 0123456789ab: 1 file changed: 1 added\n\nLease-ID: 0123456789ab\nLease-Base: abc\n") {
		t.Fatalf("branch message:\n%s", got)
	}
	// A lease's mission names the change in its stead.
	if got := BranchMessage(id, "T-42\nparser", "1 file changed", "abc", ""); !strings.HasPrefix(got, "T-42 parser: 1 file changed\n\nLease-ID: 0123456789ab\nLease-Base: abc\n") {
		t.Fatalf("branch message with a mission:\n%s", got)
	}
}
