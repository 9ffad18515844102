package gitlease

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// The agent is never host root: as root, each lease runs as a host uid of
// its own from bwrap.LeaseUIDBase; as a person, as that person. Either
// way it cannot write host-global /proc knobs (which check the uid, not a
// capability), read owner-only host files, or see the host's /etc.
func TestSandboxCannotActAsHostRoot(t *testing.T) {
	// Outside $HOME, which policy refuses to share.
	shared, err := os.MkdirTemp("/var/tmp", "git-lease-shared-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shared)
	must(t, os.Chmod(shared, 0o755))
	must(t, os.WriteFile(filepath.Join(shared, "public.txt"), []byte("public"), 0o644))
	must(t, os.WriteFile(filepath.Join(shared, "owner-only.txt"), []byte("private"), 0o600))
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, fmt.Sprintf("read_only = [%q]\n", shared))
	script := attempt("core-pattern", `v=$(cat /proc/sys/kernel/core_pattern) && printf '%s\n' "$v" > /proc/sys/kernel/core_pattern`) +
		attempt("sysrq", "printf 0 > /proc/sysrq-trigger") +
		attempt("kcore", "head -c1 /proc/kcore | grep -q .") +
		attempt("shadow", "cat /etc/shadow") +
		attempt("host-etc", "ls /etc/ssh || ls /etc/sudoers || ls /etc/gitconfig || ls /etc/apt") +
		attempt("host-users", "getent passwd | grep -v -e '^root:' -e '^agent:' -e '^nobody:' | grep -q .") +
		attempt("writable-system", "find /usr /etc /bin /lib /opt /proc/sys ! -type l -writable -print -quit 2>/dev/null | grep -q .") +
		// What the agent can read there is what anyone can: nothing
		// the host keeps to an owner or a group.
		attempt("owner-readable", "find /usr /etc /bin /lib /opt -type f -readable ! -perm -o=r -print -quit 2>/dev/null | grep -q .") +
		"id -un; cat " + shared + "/public.txt; echo; echo mine > /work/made-here.txt\n"
	if os.Getuid() == 0 {
		script += attempt("owner-only", "cat "+shared+"/owner-only.txt")
	}
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "core-pattern", "sysrq", "kcore", "shadow", "host-etc", "host-users", "writable-system", "owner-readable")
	if os.Getuid() == 0 {
		requireBlocked(t, out, "owner-only")
	}
	if !strings.Contains(out, "agent\npublic\n") {
		t.Fatalf("the agent should be \"agent\" and read what policy shares:\n%s", out)
	}
	var st unix.Stat_t
	must(t, unix.Lstat(filepath.Join(upperDir(t, x), "made-here.txt"), &st))
	if os.Getuid() == 0 && (st.Uid < bwrap.LeaseUIDBase || st.Uid >= bwrap.LeaseUIDBase+bwrap.LeaseUIDCount || st.Gid != st.Uid) {
		t.Fatalf("as root, the agent's file is owned by %d:%d, want the lease's own uid from %d", st.Uid, st.Gid, bwrap.LeaseUIDBase)
	}
	if os.Getuid() != 0 && int(st.Uid) != os.Getuid() {
		t.Fatalf("the agent's file is owned by %d, want the user's %d", st.Uid, os.Getuid())
	}
}

// Leases run by root differ from each other at the file-permission level.
func TestSandboxLeasesAsRootHaveUIDsOfTheirOwn(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("a person's leases all run as that person")
	}
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	owner := func() uint32 {
		x, _ := runAgent(t, repo, "echo x > /work/f")
		var st unix.Stat_t
		must(t, unix.Lstat(filepath.Join(upperDir(t, x), "f"), &st))
		return st.Uid
	}
	if a, b := owner(), owner(); a == b {
		t.Fatalf("two leases ran as the same host uid %d", a)
	}
}

// A descriptor that git-lease inherited without close-on-exec (an
// orchestrator's, an IDE terminal's) does not reach the agent: a directory
// descriptor would open the host's files through /proc/self/fd.
func TestSandboxCannotUseInheritedDescriptors(t *testing.T) {
	sandboxCannotUseInheritedDescriptors(t, "")
}

// sandboxCannotUseInheritedDescriptors is the attack of a lease under
// policy (which may pick a provider other than bwrap).
func sandboxCannotUseInheritedDescriptors(t *testing.T, trustedTOML string) {
	secret := t.TempDir()
	must(t, os.WriteFile(filepath.Join(secret, "inherited-secret.txt"), []byte("host file"), 0o644))
	opened, err := syscall.Open(secret, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(opened)
	// A high number without close-on-exec, as inherited descriptors come:
	// low ones are taken over by the descriptors git-lease hands its
	// children.
	const fd = 90
	must(t, unix.Dup3(opened, fd, 0))
	defer syscall.Close(fd)
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
	script := attempt("fd-path", "ls /proc/self/fd/*/ /proc/[0-9]*/fd/*/ 2>/dev/null | grep -q inherited-secret") +
		attempt("fd-open", fmt.Sprintf("cat /proc/self/fd/%d/inherited-secret.txt", fd)) +
		attempt("fd-list", fmt.Sprintf("ls -l /proc/[0-9]*/fd/ | grep -q -e %s -e ' %d -> '", secret, fd))
	_, out := runAgent(t, repo, script)
	requireBlocked(t, out, "fd-path", "fd-open", "fd-list")
}

// The agent gets a fresh session keyring: it cannot see or read the keys
// its launcher's session possesses, nor plant one there.
func TestSandboxCannotReachTheLaunchersKeyring(t *testing.T) {
	if _, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 {
		t.Skipf("no keyrings here: %v", errno)
	}
	id, err := unix.AddKey("user", "git-lease-launcher-key", []byte("hunter2"), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		t.Skipf("cannot add a key: %v", err)
	}
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	read := fmt.Sprintf(`perl -e 'my $b = "x" x 64; exit(syscall(%d, %d, %d, $b, 64) > 0 ? 0 : 1)'`, unix.SYS_KEYCTL, unix.KEYCTL_READ, id)
	plant := fmt.Sprintf(`perl -e 'my ($t, $d, $p) = ("user", "git-lease-planted", "x"); exit(syscall(%d, $t, $d, $p, 1, %d) > 0 ? 0 : 1)'`,
		unix.SYS_ADD_KEY, unix.KEY_SPEC_SESSION_KEYRING)
	script := attempt("proc-keys", "grep -q git-lease-launcher /proc/keys") + attempt("read", read) + plant + "\n" +
		fmt.Sprintf("perl -e 'exit(syscall(%d) > 0 ? 0 : 1)' && echo PERL-SYSCALL-WORKS\n", unix.SYS_GETPID)
	_, out := runAgent(t, repo, script)
	requireBlocked(t, out, "proc-keys", "read")
	if !strings.Contains(out, "PERL-SYSCALL-WORKS") {
		t.Fatalf("the keyring attack could not run (perl's syscall failed):\n%s", out)
	}
	if planted, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", "git-lease-planted", 0); err == nil {
		t.Fatalf("the agent planted key %d in the launcher's session keyring", planted)
	}
}

// The default seccomp filter refuses what no coding agent needs, and which
// the sandbox would otherwise allow its unprivileged agent: each call here
// succeeds in a sandbox without the filter.
func TestSandboxCannotUseRefusedKernelCalls(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	call := func(args string) string {
		return fmt.Sprintf(`perl -e 'my $p = "\0" x 128; my $r = syscall(%s); exit($r >= 0 ? 0 : 1)'`, args)
	}
	script := attempt("join-keyring", call(fmt.Sprintf("%d, %d, 0", unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING))) +
		attempt("add-key", call(fmt.Sprintf(`%d, my $t = "user", my $d = "k", $p, 1, %d`, unix.SYS_ADD_KEY, unix.KEY_SPEC_PROCESS_KEYRING))) +
		attempt("userfaultfd", call(fmt.Sprintf("%d, 1", unix.SYS_USERFAULTFD))) + // UFFD_USER_MODE_ONLY: allowed unprivileged
		attempt("io-uring", call(fmt.Sprintf("%d, 1, $p", unix.SYS_IO_URING_SETUP))) +
		attempt("unshare", "unshare -r true") +
		"grep '^Seccomp_filters:' /proc/self/status\n"
	_, out := runAgent(t, repo, script)
	requireBlocked(t, out, "join-keyring", "add-key", "userfaultfd", "io-uring", "unshare")
	if !strings.Contains(out, "Seccomp_filters:\t1") {
		t.Fatalf("the agent runs without the filter:\n%s", out)
	}
}

// Empty files cost no bytes but kernel memory: /tmp, the home and
// /dev/shm share one tmpfs whose inodes the kernel bounds.
func TestBoundsKernelCountsScratchInodes(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "[limits]\ndisk = \"64MiB\"\n")
	// 64 MiB allows 4096 inodes; the three places share them.
	x, out := runAgent(t, repo, "for i in $(seq 3000); do : > /tmp/t$i && : > ~/h$i || break; done; ls /tmp | wc -l; ls ~ | wc -l")
	if f := strings.Fields(out); len(f) < 2 || f[len(f)-2] == "3000" && f[len(f)-1] == "3000" {
		t.Fatalf("6000 empty files fit in the scratch tmpfs (state %s):\n%s", x.Lease.State, out)
	}
}

// With a cgroup, the CPU bound is the lease's total: processes that each
// stay under it cannot add up past it.
func TestBoundsKernelCountsTheLeasesCPUTotal(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "[limits]\ncpu = \"2s\"\n")
	// One after another, each under the bound even on an idle machine.
	x, out := runAgent(t, repo, "for i in 1 2 3 4 5; do timeout 1.5 sh -c 'while :; do :; done'; done; sleep 60")
	if !strings.Contains(x.Lease.Enforcement, "cpu total") {
		t.Skipf("no cgroup counts CPU here (%s)", x.Lease.Enforcement)
	}
	if x.Lease.State != Failed || x.Lease.Agent == nil || x.Lease.Agent.Bound != "cpu" {
		t.Fatalf("state %s, agent %+v: want failed at the cpu bound\n%s", x.Lease.State, x.Lease.Agent, out)
	}
}

// The sandbox's mount table names no host path of the repository, the
// lease or the git-lease binary (a bind's source shows there): the lease's
// own files and the binary are copies, or live on a tmpfs of their own,
// which also bounds the agent's state file.
func TestSandboxCannotSeeHostPaths(t *testing.T) {
	sandboxCannotSeeHostPaths(t, "")
}

// sandboxCannotSeeHostPaths is the attack of a lease under policy (which
// may pick a provider other than bwrap).
func sandboxCannotSeeHostPaths(t *testing.T, trustedTOML string) {
	repo, dir := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML+"[network]\nallow = [\"example.com:443\"]\n")
	// The network forwarder runs git-lease (here, the test binary) inside.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := attempt("repo-path", splitGrep("cat /proc/self/mountinfo", dir)) +
		attempt("common-dir", splitGrep("cat /proc/self/mountinfo", repo.CommonDir)) +
		attempt("binary-path", splitGrep("cat /proc/self/mountinfo", self)) +
		attempt("huge-state", "head -c 3000000 /dev/zero > /run/lease/state") +
		"echo 'blocked: a question' > /run/lease/state; sleep 2\n"
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "repo-path", "common-dir", "binary-path", "huge-state")
	if events := logEvents(t, dir, x.Lease.ID); count(events, "blocked") != 1 {
		t.Fatalf("the state the agent wrote did not reach the host: events %v\n%s", events, out)
	}
}

// Policy may refuse a lease whose memory, process and CPU bounds only
// per-process rlimits would bind: with a cgroup the agent runs under it,
// without one it never runs.
func TestBoundsRequireCgroup(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "[limits]\nrequire_cgroup = true\n")
	var out bytes.Buffer
	x, err := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, Command: []string{"sh", "-c", "echo AGENT-RAN"}, Output: &out})
	if err == nil {
		if !strings.Contains(x.Lease.Enforcement, "cgroup") {
			t.Fatalf("the agent ran without a cgroup (%s)", x.Lease.Enforcement)
		}
		return
	}
	if !strings.Contains(err.Error(), "limits.require_cgroup") || strings.Contains(out.String(), "AGENT-RAN") {
		t.Fatalf("want a refusal naming limits.require_cgroup before the agent runs: %v\n%s", err, out.String())
	}
}

// A directory the agent locks (mode 000) hides nothing from collection and
// leaves nothing its owner cannot remove: directory modes are no part of a
// result, so the host opens them once the agent has ended.
func TestSandboxCannotHideFilesInLockedDirectories(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	x, out := runAgent(t, repo, "mkdir -p locked/deeper; echo hidden > locked/deeper/f; chmod 000 locked/deeper locked")
	if x.Lease.State != Review || x.Lease.Result == nil || len(x.Lease.Result.Manifest) != 1 || x.Lease.Result.Manifest[0].Path != "locked/deeper/f" {
		t.Fatalf("lease %s, result %+v:\n%s", x.Lease.State, x.Lease.Result, out)
	}
}
