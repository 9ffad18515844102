package bwrap

import (
	"os/exec"
	"slices"
	"testing"
)

// The events reach everything the traced thread forks (bwrap, and a
// shell in a user namespace of its own), and the kernel keeps only the
// refusals: 1,000 allowed writes and reads, and an open of a missing file,
// leave no sample; two refused writes leave one each, with the path only
// where the sample's copy of the caller's stack held it (touch's
// argument, not the shell's redirection).
func TestOpenTraceSamplesOnlyRefusedOpens(t *testing.T) {
	ids, err := traceAvailable()
	if err != nil {
		t.Skipf("no tracing here: %v", err)
	}
	bwrapPath, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("no bwrap")
	}
	cmd := exec.Command(bwrapPath, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-user", "sh", "-c",
		`i=0; while [ $i -lt 1000 ]; do echo $i > /tmp/f$i; read -r l < /tmp/f$i; i=$((i+1)); done
(echo x > /etc/a) 2>/dev/null; touch /usr/b 2>/dev/null; cat /nonexistent 2>/dev/null; true`)
	trace, traceErr, err := startTraced(ids, cmd.Start)
	if err != nil || traceErr != nil {
		t.Fatal(err, traceErr)
	}
	defer close(trace.released)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	var got []string
	trace.drain(func(s refusedOpen) { got = append(got, s.open.name+" "+s.errno.Error()+" "+s.outside(nil, false)) })
	// touch's path is on its stack, but the sample's copy of the stack
	// ends at the first page the process never touched, which the
	// kernel's random gap below the arguments sometimes holds.
	unread, touched := "openat read-only file system "+pathUnread, "openat read-only file system /usr/b"
	slices.Sort(got)
	if len(got) != 2 || got[0] != unread || got[1] != unread && got[1] != touched || trace.lost != 0 {
		t.Errorf("samples %q (%d lost), want the redirection's without its path and touch's", got, trace.lost)
	}
}
