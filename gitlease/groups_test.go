package gitlease

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// groupFixtureEnv names, for the unprivileged rerun, the directory that
// groupFixture made for the group the rerun's user has as a supplementary
// group.
const groupFixtureEnv = "GITLEASE_TEST_GROUP_FIXTURE"

// groupFixture makes (as root) a directory of things only the members of
// group gid may use: a file they may read, a file they may write, and a
// Unix socket they may connect to (as a daemon's, docker.sock, would be),
// served until the test ends. It returns the directory.
func groupFixture(t *testing.T, gid int) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "git-lease-groups-") // outside $HOME, which policy refuses to share
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	for name, mode := range map[string]os.FileMode{"group-only.txt": 0o640, "group-writable.txt": 0o660} {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte("group secret\n"), 0o600))
		must(t, os.Chown(p, 0, gid))
		must(t, os.Chmod(p, mode))
	}
	sock := filepath.Join(dir, "group.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	must(t, os.Chown(sock, 0, gid))
	must(t, os.Chmod(sock, 0o660))
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("group daemon\n"))
			c.Close()
		}
	}()
	return dir
}

// TestSandboxCannotWriteThroughSupplementaryGroups checks what a person's
// supplementary groups give the agent (an unprivileged user namespace
// cannot drop them, setgroups is denied there): read access to what the
// sandbox shows read-only and only the group may read, and connecting to a
// Unix socket there that only the group may use, both as on the host; but
// no writing through the group (those binds are read-only), no giving a
// file to the group (it is not mapped into the sandbox), and inside the
// sandbox the groups show only as the overflow gid. Run as root, the agent
// has none of root's groups, so the same files and socket are out of
// reach. The unprivileged rerun (TestSandboxAsUnprivilegedUser) gives its
// user a supplementary group and the fixture for it.
func TestSandboxCannotWriteThroughSupplementaryGroups(t *testing.T) {
	dir := os.Getenv(groupFixtureEnv)
	if os.Getuid() == 0 {
		dir = groupFixture(t, 0) // root's own group
	}
	if dir == "" {
		t.Skip("run as root (or by TestSandboxAsUnprivilegedUser, which gives its user a supplementary group and " + groupFixtureEnv + ")")
	}
	fi, err := os.Stat(filepath.Join(dir, "group-only.txt"))
	if err != nil {
		t.Fatal(err)
	}
	gid := fi.Sys().(*syscall.Stat_t).Gid
	groups, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	member := os.Getuid() != 0 && slices.Contains(groups, int(gid))
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, fmt.Sprintf("read_only = [%q]\n", dir))
	read := "cat " + dir + "/group-only.txt"
	connect := `perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!"; print <$s>' ` + dir + "/group.sock"
	script := attempt("group-write", "echo x >> "+dir+"/group-writable.txt") +
		attempt("give-to-group", fmt.Sprintf("echo y > /work/mine.txt && chgrp %d /work/mine.txt", gid)) +
		attempt("group-read", read) + attempt("group-connect", connect) +
		"echo GROUPS=$(id -G)\n"
	if member {
		script += read + "\n" + connect + "\n"
	}
	_, out := runAgent(t, repo, script)
	if !member {
		requireBlocked(t, out, "group-write", "give-to-group", "group-read", "group-connect")
		return
	}
	// What the groups allow, as the README says: reading and connecting.
	if !strings.Contains(out, "LEAK:group-read") || !strings.Contains(out, "LEAK:group-connect") || !strings.Contains(out, "group secret\ngroup daemon\n") {
		t.Fatalf("a member of group %d should read the group's file and connect to its socket in the sandbox, as the README says:\n%s", gid, out)
	}
	out = strings.NewReplacer("LEAK:group-read", "", "LEAK:group-connect", "").Replace(out)
	requireBlocked(t, out, "group-write", "give-to-group")
	if !strings.Contains(out, "GROUPS=1000 65534\n") {
		t.Fatalf("inside the sandbox the agent's groups should be its own (1000) and the overflow gid for the host's:\n%s", out)
	}
}
