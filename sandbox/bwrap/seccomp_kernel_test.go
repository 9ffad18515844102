package bwrap

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// The calls the probe makes, by what the installed filter must answer.
var (
	ordinaryCalls = []string{"getpid", "write and read", "exec /bin/true", "ioctl TCGETS", "personality query"}
	refusedCalls  = []string{"keyctl join", "add_key", "unshare user", "setns", "clone new uts", "mount", "fsopen",
		"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "finit_module", "open_by_handle_at", "syslog size",
		"settimeofday none", "fanotify_init", "personality norand", "ioctl TIOCSTI", "ioctl TIOCSTI high", "ioctl TIOCLINUX"}
	// unfilteredCalls fail with another errno than EPERM, or succeed,
	// without the filter, for any user: without them the probe could not
	// tell the filter's answer from the kernel's.
	unfilteredCalls = []string{"keyctl join", "add_key", "unshare user", "setns", "clone3", "mount", "perf_event_open",
		"personality norand", "ioctl TIOCLINUX"}
)

// TestSeccompFilterInTheKernel installs the filter in a probe process and
// makes each refused call for real, as this user and, when that is root, as
// nobody: the filter's answers do not depend on privilege. As root, many
// of these calls succeed without it (the log shows which), which is the
// point of refusing them.
func TestSeccompFilterInTheKernel(t *testing.T) {
	nativeArch(t)
	users := map[string]*syscall.Credential{"this user": nil}
	if os.Getuid() == 0 {
		users["nobody"] = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	bin := probeBinary(t)
	for user, cred := range users {
		t.Run(user, func(t *testing.T) {
			got := runProbe(t, bin, "filter:", cred)
			for _, name := range ordinaryCalls {
				if got[name] != "ok" {
					t.Errorf("%s: %s, want it allowed", name, got[name])
				}
			}
			for _, name := range refusedCalls {
				if got[name] != "EPERM" {
					t.Errorf("%s: %s, want EPERM", name, got[name])
				}
			}
			if got["clone3"] != "ENOSYS" {
				t.Errorf("clone3: %s, want ENOSYS (glibc then falls back to clone)", got["clone3"])
			}

			// Entries that policy lets through reach the kernel again.
			got = runProbe(t, bin, "filter:keyring,namespaces,personality,mount", cred)
			for _, name := range unfilteredCalls {
				if strings.HasPrefix(name, "perf") || strings.HasPrefix(name, "ioctl") {
					if got[name] != "EPERM" {
						t.Errorf("%s with other entries allowed: %s, want EPERM", name, got[name])
					}
				} else if got[name] == "EPERM" || got[name] == "ENOSYS" {
					t.Errorf("%s with its entry allowed: %s", name, got[name])
				}
			}

			if filtered, _ := os.ReadFile("/proc/self/status"); !strings.Contains(string(filtered), "\nSeccomp:\t0\n") {
				t.Skip("this test already runs under a seccomp filter, which may refuse the unfiltered calls too")
			}
			got = runProbe(t, bin, "none", cred)
			for _, name := range unfilteredCalls {
				if got[name] == "EPERM" || got[name] == "ENOSYS" {
					t.Errorf("%s without the filter: %s, so the probe cannot tell the filter's answer", name, got[name])
				}
			}
			t.Logf("without the filter: %v", got)
		})
	}
}

// TestSeccompFilterKillsX32Calls makes a call through the x32 ABI, whose
// numbers the filter does not read: the process dies of SIGSYS.
func TestSeccompFilterKillsX32Calls(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 is an x86-64 ABI")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{probeEnv + "=x32"}
	err := cmd.Run()
	status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !status.Signaled() || status.Signal() != syscall.SIGSYS {
		t.Fatalf("the x32 call ended with %v, want death by SIGSYS", err)
	}
}

// probeBinary is this test binary where any user may run it.
func probeBinary(t *testing.T) string {
	dir, err := os.MkdirTemp("", "git-lease-seccomp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.ReadFile(os.Args[0])
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "bwrap.test"), self, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "bwrap.test")
}

// runProbe runs the probe in mode, as cred's user when cred is set, in a
// session of its own (so no terminal of the test's is its controlling
// one), and returns what each call gave.
func runProbe(t *testing.T, bin, mode string, cred *syscall.Credential) map[string]string {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{probeEnv + "=" + mode, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setsid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var got map[string]string
	if err == nil {
		err = json.Unmarshal(out, &got)
	}
	if err != nil {
		t.Fatalf("probe %s: %v\n%s%s", mode, err, out, stderr.String())
	}
	return got
}
