package gitlease

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestBoundsStopTheAgent runs agents that try to exceed each bound and
// checks that each is stopped soon, ends failed, and names the bound. Run
// as root where the kernel can bound the disk (a disk image of the lease's
// own), each attack on the disk must also have been refused by the kernel
// (ENOSPC), not only stopped later by the host's watch, which is all there
// is for a person.
func TestBoundsStopTheAgent(t *testing.T) {
	kernelDisk := os.Getuid() == 0 && haveMkfsExt4() && exists("/dev/loop-control")
	cases := []struct{ name, trustedTOML, script, bound string }{
		{"wall time", `wall = "2s"`, "sleep 60", "wall"},
		{"output", `output = "64KiB"`, "yes", "output"},
		{"processes", `processes = 20`, "for i in $(seq 200); do sleep 60 & done; wait", "processes"},
		{"memory", `memory = "64MiB"`, "exec tail /dev/zero", "memory"},
		{"memory in tmpfs, which no RSS shows", `memory = "64MiB"`, "head -c 200M /dev/zero > /dev/shm/fill; sleep 60", "memory"},
		{"disk, one big file", `disk = "8MiB"`, "exec head -c 64M /dev/zero > big", "disk"},
		{"disk, through the cache overlay", "disk = \"8MiB\"\n[caches.tool]\npaths = [\"TOOL:/cache/tool\"]", "mkdir -p $TOOL && for i in $(seq 64); do head -c 1M /dev/zero > $TOOL/f$i; done; sleep 60", "disk"},
		{"disk, a sparse file", `disk = "8MiB"`, "exec truncate -s 2G sparse", "disk"},
		{"disk, many files", `disk = "8MiB"`, "for i in $(seq 64); do head -c 1M /dev/zero > f$i; done; sleep 60", "disk"},
		{"disk, fallocate past the bound in one call", `disk = "8MiB"`, "fallocate -l 4M a && fallocate -l 6M b; sleep 60", "disk"},
		{"disk, empty files (inodes)", `disk = "8MiB"`, "for i in $(seq 100000); do : > e$i || break; done; sleep 60", "disk"},
		{"cpu time", `cpu = "1s"`, "while :; do :; done", "cpu"},
		// What a walk of the upper directory cannot see.
		{"disk, files unlinked while open", `disk = "8MiB"`, "exec 3>a 4>b 5>c; rm a b c; for fd in 3 4 5; do head -c 4M /dev/zero >&$fd; done; sleep 60", "disk"},
		{"disk, a file unlinked while open, still growing", `disk = "8MiB"`, "exec 3>a; rm a; while head -c 1M /dev/zero >&3; do :; done; sleep 60", "disk"},
		{"disk, deeper than PATH_MAX", `disk = "8MiB"`, "d=$(printf 'd%.0s' $(seq 200)); for i in $(seq 30); do mkdir $d && cd $d || exit 9; done; head -c 6M /dev/zero > a; head -c 6M /dev/zero > b; sleep 60", "disk"},
		{"disk, a directory no one may list", `disk = "8MiB"`, "mkdir hide; head -c 6M /dev/zero > hide/a; head -c 6M /dev/zero > hide/b; chmod 000 hide; sleep 60", "disk"},
		{"memory in a memfd", `memory = "64MiB"`, fmt.Sprintf(`perl -e 'my $n = "x"; my $fd = syscall(%d, $n, 0); open(my $f, ">&=", $fd) or die; print $f ("\0" x 1048576) for 1..100; sleep 60'`, unix.SYS_MEMFD_CREATE), "memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "[limits]\n"+tc.trustedTOML+"\n")
			began := time.Now()
			var buf bytes.Buffer
			// A failed lease's collection may fail too (a tree deeper than
			// PATH_MAX cannot be collected): the lease's record says why.
			x, _ := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, Command: []string{"bash", "-c", tc.script}, Output: &buf})
			took := time.Since(began)
			out := buf.String()
			if x == nil {
				t.Fatalf("no lease started:\n%s", out)
			}
			if x.Lease.State != Failed || x.Lease.Agent == nil || x.Lease.Agent.Bound != tc.bound {
				t.Fatalf("state %s, agent %+v, reason %q; want failed at the %s bound\n%.2000s", x.Lease.State, x.Lease.Agent, x.Lease.Reason, tc.bound, out)
			}
			if took > 30*time.Second {
				t.Fatalf("the agent was stopped only after %s", took)
			}
			switch {
			case tc.bound != "disk":
			case !kernelDisk && !strings.Contains(x.Lease.Enforcement, "no kernel bound for /work's disk, the host's watch ("):
				t.Fatalf("the lease does not say that only the host's watch bounds its disk: %q", x.Lease.Enforcement)
			case kernelDisk && tc.name != "disk, a sparse file" && (!strings.Contains(x.Lease.Enforcement, "ext4 image") || !strings.Contains(out, "No space left on device")):
				t.Fatalf("run as root, the kernel did not refuse the write (enforcement %q):\n%.2000s", x.Lease.Enforcement, out)
			}
		})
	}
}

// TestSandboxAsUnprivilegedUser runs the sandbox tests again as an ordinary
// user, as people run git-lease, when the tests run as root (as CI does).
// The user is created if missing.
func TestSandboxAsUnprivilegedUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("already unprivileged: the sandbox tests ran as this user")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	const name = "gitlease-test"
	u, err := user.Lookup(name)
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home", name).CombinedOutput(); err != nil {
			t.Skipf("cannot create an unprivileged user: %v %s", err, out)
		}
		if u, err = user.Lookup(name); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// A supplementary group, as people have, for
	// TestSandboxCannotWriteThroughSupplementaryGroups.
	const extra = "gitlease-test-extra"
	g, err := user.LookupGroup(extra)
	if err != nil {
		if out, err := exec.Command("groupadd", "--system", extra).CombinedOutput(); err != nil {
			t.Skipf("cannot create a group: %v %s", err, out)
		}
		if g, err = user.LookupGroup(extra); err != nil {
			t.Fatal(err)
		}
	}
	extraGID, _ := strconv.Atoi(g.Gid)
	dir, err := os.MkdirTemp("", "git-lease-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chown(dir, uid, gid))
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gitlease.test")
	must(t, os.WriteFile(bin, self, 0o755))
	cmd := exec.Command(bin, "-test.run", "^(TestSandboxCannot|TestSandboxOnAgentFS|TestSandboxCache|TestSandboxEscape|TestSandboxNetwork|TestSandboxCredential|TestSandboxPreset|TestSandboxLayered|TestConcurrent|TestBounds)", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8", groupFixtureEnv + "=" + groupFixture(t, extraGID)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(extraGID)}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox tests as %s (uid %d): %v\n%s", name, uid, err, out)
	}
	t.Logf("as %s (uid %d): %s", name, uid, lastLine(out))
}

// haveMkfsExt4 reports whether mkfs.ext4 is installed, where root finds it.
func haveMkfsExt4() bool {
	_, err := exec.LookPath("mkfs.ext4")
	return err == nil || exists("/usr/sbin/mkfs.ext4") || exists("/sbin/mkfs.ext4")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func lastLine(b []byte) string {
	s := string(b)
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return fmt.Sprint(s)
}
