package gitlease

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/sandbox/bwrap"
)

// TestMain lets this test binary serve as the sandbox's init when the
// bwrap provider re-executes it, and as its network forwarder, as the
// git-lease binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == bwrap.InitArg {
		bwrap.Init()
	}
	if len(os.Args) > 1 && os.Args[1] == bwrap.ForwardArg {
		bwrap.RunForwarder(os.Args[2:])
	}
	if os.Getenv(outerListenerEnv) == "1" {
		holdOuterListener()
	}
	os.Exit(m.Run())
}

// sandboxRepo makes a repository for sandboxed leases, with a trusted
// policy file holding policy (TOML, may be empty).
func sandboxRepo(t *testing.T, files map[string]string, trustedTOML string) (*refs.Repo, string) {
	t.Helper()
	dir := refstest.Repo(t, files)
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	must(t, os.MkdirAll(filepath.Join(cfg, "git-lease"), 0o755))
	must(t, os.WriteFile(filepath.Join(cfg, "git-lease", "policy.toml"), []byte(trustedTOML), 0o644))
	repo, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo, dir
}

// runAgent runs script under bash in a sandboxed lease and returns the
// lease and everything the agent printed.
func runAgent(t *testing.T, repo *refs.Repo, script string) (*Execution, string) {
	t.Helper()
	var out bytes.Buffer
	x, err := Start(context.Background(), repo, StartOptions{
		Mode: Sandboxed, Command: []string{"bash", "-c", script}, Output: &out,
	})
	if x == nil {
		t.Fatalf("start: %v", err)
	}
	if err != nil {
		t.Fatalf("lease %s: %v\n%s", x.Lease.ID, err, out.String())
	}
	return x, out.String()
}

// attempt is a shell snippet that tries something and prints BLOCKED or
// LEAK with its name, so a test sees exactly which attempt succeeded.
func attempt(name, cmd string) string {
	return fmt.Sprintf("if ( %s ) >/dev/null 2>&1; then echo LEAK:%s; else echo BLOCKED:%s; fi\n", cmd, name, name)
}

// splitGrep greps cmd's output for s without s appearing on any command
// line in the sandbox (the script's own and grep's, which /proc shows): the
// pattern is assembled from two halves into a file.
func splitGrep(cmd, s string) string {
	h := len(s) / 2
	return fmt.Sprintf("printf '%%s%%s' '%s' '%s' > /tmp/pattern; %s | grep -aqFf /tmp/pattern", s[:h], s[h:], cmd)
}

// requireBlocked checks that every attempt ran and none succeeded.
func requireBlocked(t *testing.T, out string, names ...string) {
	t.Helper()
	if strings.Contains(out, "LEAK:") {
		t.Fatalf("an attack succeeded:\n%s", out)
	}
	for _, n := range names {
		if !strings.Contains(out, "BLOCKED:"+n) {
			t.Fatalf("attempt %s did not run:\n%s", n, out)
		}
	}
}

func TestSandboxCannotReadTheCheckout(t *testing.T) {
	repo, dir := sandboxRepo(t, map[string]string{"committed.txt": "c"}, "")
	must(t, os.WriteFile(filepath.Join(dir, "dirty-secret.txt"), []byte("uncommitted-secret"), 0o644))
	script := attempt("checkout-file", "cat "+dir+"/dirty-secret.txt") +
		attempt("checkout-dir", "ls "+dir) +
		attempt("git-dir", "ls "+repo.CommonDir) +
		attempt("dirty-in-work", "cat /work/dirty-secret.txt") +
		"cat /work/committed.txt\n"
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "checkout-file", "checkout-dir", "git-dir", "dirty-in-work")
	if !strings.HasSuffix(strings.TrimSpace(out), "c") || x.Lease.State != Review {
		t.Fatalf("the agent should read the committed base (state %s):\n%s", x.Lease.State, out)
	}
}

func TestSandboxCannotReadHomeOrTheLaunchersSecrets(t *testing.T) {
	home := t.TempDir()
	must(t, os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine x password hunter2"), 0o600))
	must(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE"), 0o600))
	t.Setenv("HOME", home)
	t.Setenv("GIT_LEASE_ATTACK_SECRET", "s3cr3t-from-the-launcher")
	t.Setenv("SSH_AUTH_SOCK", filepath.Join(home, "agent.sock"))
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	script := attempt("home-netrc", "cat "+home+"/.netrc") +
		attempt("home-ssh", "cat "+home+"/.ssh/id_ed25519") +
		attempt("env", "env | grep -q s3cr3t") +
		attempt("proc-environ", "cat /proc/*/environ | grep -aq s3cr3t") +
		attempt("proc-secret", splitGrep("cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ", "s3cr3t-from-the-launcher")) +
		attempt("proc-paths", splitGrep("cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ", repo.CommonDir)) +
		attempt("ssh-agent", "test -n \"$SSH_AUTH_SOCK\"") +
		// The docker socket there is a decoy that hangs up: no daemon answers.
		attempt("docker-socket", `perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => shift) or exit 1; print $s "GET /_ping HTTP/1.0\r\n\r\n"; exit(defined(<$s>) ? 0 : 1)' /var/run/docker.sock`)
	_, out := runAgent(t, repo, script)
	requireBlocked(t, out, "home-netrc", "home-ssh", "env", "proc-environ", "proc-secret", "proc-paths", "ssh-agent", "docker-socket")
}

func TestSandboxCannotReachTheHostNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	script := attempt("host-loopback", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port)) +
		attempt("dns", "getent hosts example.com") +
		attempt("outside", "exec 3<>/dev/tcp/1.1.1.1/443") +
		attempt("interfaces", "tail -n +3 /proc/net/dev | grep -v lo: | grep -q :")
	_, out := runAgent(t, repo, script)
	requireBlocked(t, out, "host-loopback", "dns", "outside", "interfaces")
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the host listener accepted %d connections from the sandbox", n)
	}
}

func TestSandboxCannotSeeHostProcesses(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "")
	self := filepath.Base(os.Args[0])
	script := attempt("host-pid", splitGrep(fmt.Sprintf("cat /proc/%d/cmdline", os.Getpid()), self)) +
		attempt("many-processes", "test $(ls -d /proc/[0-9]* | wc -l) -gt 10") +
		attempt("test-binary", splitGrep("cat /proc/[0-9]*/cmdline", self))
	_, out := runAgent(t, repo, script)
	requireBlocked(t, out, "host-pid", "many-processes", "test-binary")
}

func TestSandboxCannotWriteOutsideItsTree(t *testing.T) {
	sandboxCannotWriteOutsideItsTree(t, "")
}

// sandboxCannotWriteOutsideItsTree is the attack of a lease under policy
// (which may pick a provider other than bwrap).
func sandboxCannotWriteOutsideItsTree(t *testing.T, trustedTOML string) {
	repo, dir := sandboxRepo(t, map[string]string{"a": "a"}, trustedTOML)
	outside := filepath.Dir(dir)
	script := attempt("etc", "echo x > /etc/lease-escape") +
		attempt("usr", "echo x > /usr/lease-escape") +
		attempt("root", "echo x > /lease-escape") +
		attempt("dev", "echo x > /dev/lease-escape") +
		attempt("checkout", "echo x > "+dir+"/lease-escape") +
		attempt("parent", "echo x > /work/../lease-escape && test -e "+outside+"/lease-escape") +
		attempt("git-refs", "echo x > "+repo.CommonDir+"/refs/heads/evil") +
		attempt("mount", "mount -t tmpfs none /work") +
		attempt("userns", "unshare -U true") +
		"echo inside > /work/inside.txt\n"
	x, out := runAgent(t, repo, script)
	requireBlocked(t, out, "etc", "usr", "root", "dev", "checkout", "parent", "git-refs", "mount", "userns")
	for _, p := range []string{filepath.Join(dir, "lease-escape"), filepath.Join(outside, "lease-escape"), "/etc/lease-escape", "/usr/lease-escape", "/lease-escape"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created on the host", p)
		}
	}
	if len(x.Lease.Result.Manifest) != 1 || x.Lease.Result.Manifest[0].Path != "inside.txt" {
		t.Fatalf("the lease's own change is missing: %+v", x.Lease.Result.Manifest)
	}
}

func TestConcurrentLeasesOnOneBaseAreIsolated(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"shared.txt": "base"}, "")
	runs := repo.LeaseDir("runs")
	script := func(name string) string {
		return fmt.Sprintf("echo %s > /work/%s.txt; echo %s >> /work/shared.txt; sleep 1\n", name, name, name) +
			attempt("other-work-"+name, "ls /work | grep -v -e "+name+".txt -e shared.txt | grep -q .") +
			attempt("other-upper-"+name, "ls "+runs+"/*/sandbox/upper") +
			attempt("find-"+name, "find / -xdev -name '*.txt' 2>/dev/null | grep -v -e "+name+".txt -e shared.txt | grep -q .")
	}
	type res struct {
		x   *Execution
		out string
	}
	results := make(chan res, 2)
	for _, name := range []string{"alpha", "beta"} {
		go func(name string) {
			var out bytes.Buffer
			x, err := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, Command: []string{"bash", "-c", script(name)}, Output: &out})
			if err != nil {
				out.WriteString(err.Error())
			}
			results <- res{x, out.String()}
		}(name)
	}
	seen := map[string]bool{}
	for i := 0; i < 2; i++ {
		r := <-results
		if r.x == nil || r.x.Lease.Result == nil {
			t.Fatalf("a lease did not finish:\n%s", r.out)
		}
		var paths []string
		for _, f := range r.x.Lease.Result.Manifest {
			paths = append(paths, f.Path)
		}
		got := strings.Join(paths, " ")
		if got != "alpha.txt shared.txt" && got != "beta.txt shared.txt" {
			t.Fatalf("lease %s changed %q", r.x.Lease.ID, got)
		}
		name := strings.TrimSuffix(paths[0], ".txt")
		// How the lease ended, should its output lack an attempt.
		ended := fmt.Sprintf("\n(lease %s %s: %s; agent %+v)", r.x.Lease.ID, r.x.Lease.State, r.x.Lease.Reason, r.x.Lease.Agent)
		requireBlocked(t, r.out+ended, "other-work-"+name, "other-upper-"+name, "find-"+name)
		seen[got] = true
	}
	if len(seen) != 2 {
		t.Fatalf("both leases should have their own delta: %v", seen)
	}
}

// A lease in review keeps its sandbox directory until cleanup. The kernel
// makes the overlay's work/work with mode 000; once the agent has ended it
// is opened up, so that removing the repository (rm -rf, or a test's
// temporary directory, as an unprivileged user) does not fail on it.
func TestEndedSandboxCanBeRemovedByItsOwner(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"gone.txt": "g", "kept.txt": "k"}, "")
	x := reviewLease(t, repo, "rm gone.txt; mv kept.txt moved.txt")
	info, err := os.Stat(filepath.Join(upperDir(t, x), "..", "work", "work"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o700 != 0o700 {
		t.Fatalf("work/work has mode %v after the agent ended", info.Mode().Perm())
	}
}

// upperDir is where the test reads x's sandbox's upper directory: the
// provider's Delta (on root's leases, in a mount of their disk image).
func upperDir(t *testing.T, x *Execution) string {
	t.Helper()
	p, err := providerByName(x.Lease.Provider, x.Lease.Policy)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Delta(x.spec())
	if err != nil {
		t.Fatal(err)
	}
	return d.Root
}
