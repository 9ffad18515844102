package gitlease

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

// perlSyscall is a shell command that makes one raw system call with perl
// ($p is a zeroed buffer) and fails when it does.
func perlSyscall(args string) string {
	return fmt.Sprintf(`perl -e 'my $p = "\0" x 128; exit(syscall(%s) >= 0 ? 0 : 1)'`, args)
}

// escapeFindings are a lease's escape-attempt findings by path.
func escapeFindings(t *testing.T, x *Execution) map[string]verify.Finding {
	t.Helper()
	got := map[string]verify.Finding{}
	for _, f := range x.Lease.Findings {
		if f.Rule != RuleEscapeAttempt {
			continue
		}
		if _, dup := got[f.Path]; dup {
			t.Errorf("attempt %q recorded twice", f.Path)
		}
		got[f.Path] = f
	}
	return got
}

// Each call the default filter refuses is recorded once per distinct call,
// with its entry, count and times, and still refused; a critical one
// quarantines the result.
func TestSandboxEscapeAttemptsAreRecorded(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	script := attempt("unshare", "unshare -r true") + attempt("unshare-again", "unshare -r true") +
		attempt("keyctl", perlSyscall(fmt.Sprintf("%d, %d, 0", unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING))) +
		attempt("mount", perlSyscall(fmt.Sprintf(`%d, my $s = "none", my $d = "/tmp", my $f = "tmpfs", 0, 0`, unix.SYS_MOUNT))) +
		attempt("tiocsti", perlSyscall(fmt.Sprintf("%d, 0, %d, $p", unix.SYS_IOCTL, unix.TIOCSTI))) +
		attempt("bpf", perlSyscall(fmt.Sprintf("%d, 0, 0, 0", unix.SYS_BPF))) +
		attempt("io-uring", perlSyscall(fmt.Sprintf("%d, 1, $p", unix.SYS_IO_URING_SETUP))) +
		"echo changed > a\n"
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "unshare", "unshare-again", "keyctl", "mount", "tiocsti", "bpf", "io-uring")
	if x.Lease.Escapes == nil || x.Lease.Escapes.Recording == "" {
		t.Fatalf("escape recording: %+v", x.Lease.Escapes)
	}
	want := map[string]struct {
		rule, severity string
		count          int
	}{
		"unshare(CLONE_NEWUSER)": {"namespaces", verify.SeverityCritical, 2},
		"keyctl(1)":              {"keyring", verify.SeverityCritical, 1},
		"mount":                  {"mount", verify.SeverityCritical, 1},
		"ioctl(TIOCSTI)":         {"tiocsti", verify.SeverityCritical, 1},
		"bpf(0)":                 {"bpf", verify.SeverityCritical, 1},
		"io_uring_setup":         {"io_uring", verify.SeverityMedium, 1},
	}
	got := escapeFindings(t, x)
	for path, w := range want {
		f, ok := got[path]
		switch {
		case !ok:
			t.Errorf("no finding for %s; findings: %+v", path, x.Lease.Findings)
		case f.Attempt == nil || f.Attempt.Rule != w.rule || f.Severity != w.severity || f.Attempt.Count != w.count:
			t.Errorf("%s: %+v %+v, want rule %s, severity %s, count %d", path, f, f.Attempt, w.rule, w.severity, w.count)
		case f.Attempt.First.IsZero() || f.Attempt.Last.Before(f.Attempt.First):
			t.Errorf("%s: first %s, last %s", path, f.Attempt.First, f.Attempt.Last)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d attempts recorded, want %d: %v", len(got), len(want), got)
	}
	if x.Lease.Escapes.Attempts != len(want) {
		t.Errorf("record counts %d attempts, want %d", x.Lease.Escapes.Attempts, len(want))
	}
	if x.Lease.State != Quarantined || !strings.Contains(x.Lease.Reason, "escape attempt") {
		t.Errorf("lease %s (%s), want quarantined for its escape attempts", x.Lease.State, x.Lease.Reason)
	}
}

// Policy may tolerate an entry's attempts: they are recorded all the same,
// and the result goes to review.
func TestSandboxEscapeToleratedByPolicy(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "[bwrap]\ntolerate_escapes = [\"namespaces\"]\n")
	x, out := runAgent(t, repo, attempt("unshare", "unshare -r true")+"echo changed > a\n")
	requireBlocked(t, out, "unshare")
	if f, ok := escapeFindings(t, x)["unshare(CLONE_NEWUSER)"]; !ok || f.Severity != verify.SeverityCritical {
		t.Errorf("findings %+v, want the unshare recorded as critical", x.Lease.Findings)
	}
	if x.Lease.State != Review {
		t.Errorf("lease %s (%s), want review", x.Lease.State, x.Lease.Reason)
	}
}

// A build writes 10,000 files, runs the C compiler and builds a Go module
// (when Go is installed under /usr): nothing of it is an escape attempt,
// whether its opens are traced (as root) or sent by the filter
// (record_opens).
func TestSandboxEscapeNoneFromABenignBuild(t *testing.T) {
	for _, policy := range []string{"", "[bwrap]\nrecord_opens = true\n"} {
		repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, policy)
		benignBuild(t, repo)
	}
}

func benignBuild(t *testing.T, repo *refs.Repo) {
	script := `set -e
mkdir -p /work/out && for i in $(seq 10000); do echo $i > /work/out/f$i; done
printf 'int main(void){return 0;}\n' > /tmp/m.c && cc -o /tmp/m /tmp/m.c && /tmp/m
echo CC-OK
`
	_, err := os.Stat("/usr/local/go/bin/go")
	hasGo := err == nil
	if hasGo {
		script += `mkdir -p /tmp/mod && cd /tmp/mod && printf 'module m\n\ngo 1.21\n' > go.mod &&
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("built") }\n' > main.go &&
GOTOOLCHAIN=local GOFLAGS= /usr/local/go/bin/go build -o /tmp/m2 . && /tmp/m2
`
	}
	x, out := runAgent(t, repo, script)
	if !strings.Contains(out, "CC-OK") || hasGo && !strings.Contains(out, "built") {
		t.Fatalf("the build did not run:\n%s", out)
	}
	if x.Lease.Escapes == nil || x.Lease.Escapes.Recording == "" {
		t.Fatalf("escape recording: %+v", x.Lease.Escapes)
	}
	if got := escapeFindings(t, x); len(got) > 0 {
		t.Errorf("a benign build left escape findings: %v\n%s", got, out)
	}
	if x.Lease.State != Review {
		t.Errorf("lease %s (%s), want review", x.Lease.State, x.Lease.Reason)
	}
}

// The host's secrets are not in the sandbox; reaching for them where they
// usually are (the home's credential files, the docker socket, PID 1's
// environment) is recorded, once per path and what was done, and listing
// them is not.
func TestSandboxEscapeSecretsAreWatched(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	connect := `perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => shift) or exit 1' `
	script := `ls -la ~ ~/.ssh /run /var/run/docker.sock >/dev/null; find ~ >/dev/null; stat ~/.aws/credentials >/dev/null
cat ~/.ssh/id_rsa >/dev/null; cat ~/.ssh/id_rsa >/dev/null; cat ~/.aws/credentials >/dev/null
rm ~/.netrc; mv ~/.kube/config ~/.kube/stolen
` + connect + `/var/run/docker.sock && ` + connect + `/run/docker.sock && echo CONNECTED
ls /proc/1 >/dev/null; cat /proc/1/environ >/dev/null && echo DONE
`
	x, out := runAgent(t, repo, script)
	if !strings.Contains(out, "CONNECTED") || !strings.Contains(out, "DONE") {
		t.Fatalf("the script did not run:\n%s", out)
	}
	want := map[string]struct {
		rule, syscall, severity string
		count                   int
	}{
		"/home/agent/.ssh/id_rsa":      {"secrets", "open", verify.SeverityHigh, 2},
		"/home/agent/.aws/credentials": {"secrets", "open", verify.SeverityHigh, 1},
		"/home/agent/.netrc":           {"secrets", "unlink", verify.SeverityHigh, 1},
		"/home/agent/.kube/config":     {"secrets", "rename", verify.SeverityHigh, 1},
		"/var/run/docker.sock":         {"secrets", "connect", verify.SeverityHigh, 2},
		"/proc/1/environ":              {"environ", "open", verify.SeverityMedium, 1},
	}
	got := escapeFindings(t, x)
	for path, w := range want {
		f, ok := got[path]
		if !ok || f.Attempt == nil || f.Attempt.Rule != w.rule || f.Attempt.Syscall != w.syscall || f.Attempt.Count != w.count || f.Severity != w.severity {
			t.Errorf("%s: %+v %+v, want %s %s %d time(s), %s", path, f, f.Attempt, w.rule, w.syscall, w.count, w.severity)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d attempts recorded, want %d: %v", len(got), len(want), got)
	}
	if x.Lease.State != Review {
		t.Errorf("lease %s (%s): reaching for secrets alone does not quarantine", x.Lease.State, x.Lease.Reason)
	}
}

// Changing the file tree outside the agent's places is refused by the
// kernel and recorded with the path as the agent gave it, made absolute;
// changing its own places is not recorded, nor is mkdir -p's making of
// directories that exist.
func TestSandboxEscapeWritesOutsideAreRecorded(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	script := attempt("mkdir", "mkdir /etc/planted") + attempt("mkdir-again", "mkdir /etc/planted") +
		attempt("relative", "cd /etc && mkdir ../opt/planted") + attempt("mkfifo", "mkfifo /usr/fifo") +
		attempt("unlink", "rm -f /etc/hostname") + attempt("chmod", "chmod 777 /etc/hosts") +
		attempt("link", "ln /etc/hosts /etc/hardlink") + attempt("symlink", "ln -s /work/a /etc/link") +
		attempt("rename", "mv /etc/hosts /etc/hosts2") +
		"echo ok > /work/a && echo ok > /tmp/t && echo ok > ~/h && echo ok > /dev/shm/s && echo ok > /dev/null && " +
		"mkdir -p ~/d /tmp/d /work/d/e && ln -s a /work/l && mv /work/l /work/m && chmod 600 /work/m && rm /tmp/t && echo OWN-OK\n"
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "mkdir", "mkdir-again", "relative", "mkfifo", "unlink", "chmod", "link", "symlink", "rename")
	if !strings.Contains(out, "OWN-OK") {
		t.Fatalf("writing the agent's own places failed:\n%s", out)
	}
	want := map[string]int{"/etc/planted": 2, "/opt/planted": 1, "/usr/fifo": 1, "/etc/hostname": 1,
		"/etc/hosts": 2, "/etc/hardlink": 1, "/etc/link": 1, "/etc/hosts2": 1}
	got := writeOutsideFindings(x)
	for p, n := range want {
		if got[p] != n {
			t.Errorf("%s: %d attempt(s) recorded, want %d; findings %+v", p, got[p], n, x.Lease.Findings)
		}
	}
	if len(got) != len(want) {
		t.Errorf("recorded %v, want %v", got, want)
	}
}

// writeOutsideFindings are the lease's write-outside attempts: their
// counts by path.
func writeOutsideFindings(x *Execution) map[string]int {
	got := map[string]int{}
	for _, f := range x.Lease.Findings {
		if f.Rule == RuleEscapeAttempt && f.Attempt != nil && f.Attempt.Rule == "write-outside" {
			got[f.Path] += f.Attempt.Count
		}
	}
	return got
}

// Where trusted policy asks for it, an open that would write outside the
// agent's places (to create, write or truncate a file) is recorded too,
// once per path however often; reading there, and writing the agent's own
// places or its devices, is not.
func TestSandboxEscapeOpensOutsideAreRecorded(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "[bwrap]\nrecord_opens = true\n")
	script := attempt("create", "echo x > /etc/planted") + attempt("touch", "touch /usr/planted") +
		attempt("append", "echo x >> /etc/hosts") + attempt("truncate", ": > /etc/hosts") +
		attempt("relative", "cd /usr/bin && echo x > ../planted2") +
		"cat /etc/hosts /etc/passwd >/dev/null && echo ok > /work/a && echo ok > /tmp/t && echo ok > ~/h && " +
		"echo ok > /dev/shm/s && echo ok > /dev/null && echo ok >> /tmp/t && touch /work/a && echo OWN-OK\n"
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "create", "touch", "append", "truncate", "relative")
	if !strings.Contains(out, "OWN-OK") {
		t.Fatalf("writing the agent's own places failed:\n%s", out)
	}
	want := map[string]int{"/etc/planted": 1, "/usr/planted": 1, "/etc/hosts": 2, "/usr/planted2": 1}
	if got := writeOutsideFindings(x); !maps.Equal(got, want) {
		t.Errorf("recorded %v, want %v; findings %+v", got, want, x.Lease.Findings)
	}

}

// Without record_opens, where the host may trace the kernel's syscall
// tracepoints (root), a write outside that begins with an open is recorded
// all the same: with its path where the caller's stack held it at the
// refusal (a program's arguments), else without one, saying so (a shell's
// redirection, an interpreter's string: never a path read later from
// memory the agent may have reused); each distinct path once, with its
// count. Reads outside, and writes to the agent's own places, are not
// recorded. As a normal user the lease says these writes went unrecorded.
func TestSandboxEscapeOpensAreTraced(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	script := attempt("redirect", "echo x > /etc/f") + attempt("truncate", ": > /usr/bin/x") +
		attempt("rdwr", `perl -e 'open(my $f, "+<", "/etc/hostname") or exit 1'`) +
		attempt("openat2", perlSyscall(fmt.Sprintf(`%d, -100, my $n = "/etc/o2", my $h = pack("QQQ", %d, 0, 0), 24`, unix.SYS_OPENAT2, unix.O_WRONLY|unix.O_CREAT))) +
		attempt("touch", "touch /usr/planted") + attempt("touch-again", "touch /usr/planted") +
		attempt("tee", "tee /etc/teed </dev/null") +
		"cat /etc/hosts /etc/passwd >/dev/null; cat /etc/shadow 2>/dev/null; " +
		"echo ok > /work/a && touch /work/b && echo ok > /tmp/t && echo ok > /dev/null && echo OWN-OK\n"
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "redirect", "truncate", "rdwr", "openat2", "touch", "touch-again", "tee")
	if !strings.Contains(out, "OWN-OK") {
		t.Fatalf("writing the agent's own places failed:\n%s", out)
	}
	e := x.Lease.Escapes
	if e == nil {
		t.Fatal("no escape record")
	}
	got := map[string]int{}
	for _, f := range x.Lease.Findings {
		if f.Rule == RuleEscapeAttempt && f.Attempt != nil && f.Attempt.Rule == "write-outside" {
			got[f.Attempt.Syscall+" "+f.Path] += f.Attempt.Count
		}
	}
	if os.Getuid() != 0 {
		if !strings.Contains(e.OpensUnrecorded, "tracefs") || len(got) != 0 {
			t.Errorf("as a normal user: opens_unrecorded %q, recorded %v; want them unrecorded, saying why", e.OpensUnrecorded, got)
		}
		return
	}
	if e.OpensUnrecorded != "" || !strings.Contains(e.Recording, "perf tracepoints") {
		t.Errorf("recorded by %s, opens_unrecorded %q", e.Recording, e.OpensUnrecorded)
	}
	// touch's and tee's paths are on their stacks, but the sample's copy
	// of a stack ends at the first page the process never touched, which
	// the kernel's random gap below the arguments sometimes holds: each
	// is recorded with its path or without.
	unread := "(path not read: not on the caller's stack)"
	withPath := map[string]int{"openat /usr/planted": 2, "openat /etc/teed": 1}
	opens := 0
	for k, n := range got {
		if k == "openat2 "+unread {
			continue
		} else if k == "openat "+unread {
			opens += n
		} else if n <= withPath[k] {
			opens += n
		} else {
			t.Errorf("recorded %s %d time(s)", k, n)
		}
	}
	if opens != 6 || got["openat "+unread] < 3 || got["openat2 "+unread] != 1 || len(got) > 4 {
		t.Errorf("recorded %v: want 6 openat (3 without a path, touch's and tee's with or without) and 1 openat2 without a path", got)
	}
}

// outerListenerEnv makes this test binary run under a seccomp filter with
// a listener of its own (see holdOuterListener), as under an outer sandbox
// that records what it refuses.
const outerListenerEnv = "GIT_LEASE_TEST_OUTER_LISTENER"

// holdOuterListener installs, on every thread, a filter that notifies acct
// (which nothing here calls) and keeps its listener open: the kernel then
// gives no process below a listener of its own.
func holdOuterListener() {
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_ACCT},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	if err == nil {
		flags := unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH | unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
		if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(flags), uintptr(unsafe.Pointer(&fprog))); errno != 0 {
			err = errno
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "outer listener:", err)
		os.Exit(2)
	}
}

// Where the kernel gives the sandbox no listener, refused calls are still
// refused, the lease says they went unrecorded, and trusted policy may
// refuse such a start instead.
func TestSandboxEscapeRecordingUnavailable(t *testing.T) {
	if os.Getenv(outerListenerEnv) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSandboxEscapeRecordingUnavailable$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), outerListenerEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSandboxEscapeRecordingUnavailable") {
			t.Fatalf("under an outer listener: %v\n%s", err, out)
		}
		return
	}
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	x, out := runAgent(t, repo, attempt("unshare", "unshare -r true")+"cat ~/.ssh/id_rsa >/dev/null\n")
	requireBlocked(t, out, "unshare")
	e := x.Lease.Escapes
	if e == nil || !strings.Contains(e.Unavailable, "EBUSY") && !strings.Contains(e.Unavailable, "busy") {
		t.Fatalf("escape record %+v, want refused calls unrecorded for the listener the kernel refused", e)
	}
	if got := escapeFindings(t, x); len(got) != 1 || got["/home/agent/.ssh/id_rsa"].Attempt == nil {
		t.Errorf("findings %v, want the decoy's open alone", got)
	}

	repo, _ = sandboxRepo(t, map[string]string{"a": "a"}, "[bwrap]\nrequire_recording = true\n")
	x, err := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, Command: []string{"true"}, Output: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "require_recording") {
		t.Fatalf("start with require_recording: %v, want it refused", err)
	}
	if x != nil && x.Lease.State != Failed {
		t.Errorf("lease %s, want failed", x.Lease.State)
	}
}
