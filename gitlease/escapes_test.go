package gitlease

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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

// A build writes files, runs the C compiler and builds a Go module (when
// Go is installed under /usr): nothing of it is an escape attempt.
func TestSandboxEscapeNoneFromABenignBuild(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	script := `set -e
mkdir -p /work/out && for i in $(seq 500); do echo $i > /work/out/f$i; done
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
// usually are (the home's credential files) is recorded, once per path and
// what was done, and listing them is not.
func TestSandboxEscapeSecretsAreWatched(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	script := `ls -la ~ ~/.ssh >/dev/null; find ~ >/dev/null; stat ~/.aws/credentials >/dev/null
cat ~/.ssh/id_rsa >/dev/null; cat ~/.ssh/id_rsa >/dev/null; cat ~/.aws/credentials >/dev/null
rm ~/.netrc; mv ~/.kube/config ~/.kube/stolen; echo DONE
`
	x, out := runAgent(t, repo, script)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script did not run:\n%s", out)
	}
	want := map[string]struct {
		syscall string
		count   int
	}{
		"/home/agent/.ssh/id_rsa":      {"open", 2},
		"/home/agent/.aws/credentials": {"open", 1},
		"/home/agent/.netrc":           {"unlink", 1},
		"/home/agent/.kube/config":     {"rename", 1},
	}
	got := escapeFindings(t, x)
	for path, w := range want {
		f, ok := got[path]
		if !ok || f.Attempt == nil || f.Attempt.Rule != "secrets" || f.Attempt.Syscall != w.syscall || f.Attempt.Count != w.count || f.Severity != verify.SeverityHigh {
			t.Errorf("%s: %+v %+v, want secrets %s %d time(s), high", path, f, f.Attempt, w.syscall, w.count)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d attempts recorded, want %d: %v", len(got), len(want), got)
	}
	if x.Lease.State != Review {
		t.Errorf("lease %s (%s): reaching for secrets alone does not quarantine", x.Lease.State, x.Lease.Reason)
	}
}

// Writing outside the agent's places is refused by the kernel and recorded
// with the path as the agent gave it, made absolute; writing its own
// places (and /dev/null) is not recorded.
func TestSandboxEscapeWritesOutsideAreRecorded(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	script := attempt("create", "echo x > /etc/planted") + attempt("create-again", "echo x > /etc/planted") +
		attempt("relative", "cd /etc && echo x > ../opt/planted") +
		attempt("mkdir", "mkdir /usr/planted") + attempt("unlink", "rm -f /etc/hostname") +
		attempt("chmod", "chmod 777 /etc/hosts") + attempt("symlink", "ln -s /work/a /etc/link") +
		attempt("rename", "mv /etc/hosts /etc/hosts2") +
		"echo ok > /work/a && echo ok > /tmp/t && echo ok > ~/h && echo ok > /dev/shm/s && echo ok > /dev/null && mkdir -p ~/d /tmp/d && rm /tmp/t && echo OWN-OK\n"
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "create", "create-again", "relative", "mkdir", "unlink", "chmod", "symlink", "rename")
	if !strings.Contains(out, "OWN-OK") {
		t.Fatalf("writing the agent's own places failed:\n%s", out)
	}
	want := map[string]int{"/etc/planted": 2, "/opt/planted": 1, "/usr/planted": 1, "/etc/hostname": 1,
		"/etc/hosts": 2, "/etc/link": 1, "/etc/hosts2": 1}
	got := map[string]int{}
	for _, f := range x.Lease.Findings {
		if f.Rule == RuleEscapeAttempt && f.Attempt != nil && f.Attempt.Rule == "write-outside" {
			got[f.Path] += f.Attempt.Count
		}
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("%s: %d attempt(s) recorded, want %d; findings %+v", p, got[p], n, x.Lease.Findings)
		}
	}
	if len(got) != len(want) {
		t.Errorf("recorded %v, want %v", got, want)
	}
}
