package crabbox

import (
	"bufio"
	"context"
	"crypto/sha1"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// TestRealCrabbox is the contract test against the real Crabbox CLI: a
// `crabbox` on PATH (0.44.0 or later) leases a loopback sshd (Debian's openssh-server, started here
// with a throwaway host key and authorized key) through its static-SSH
// provider, which runs the same lease, copy and run path as the providers
// that isolate. The only difference from local-container is a policy shim:
// testOnlyStaticSSH, and the static target named through PassEnv. It is
// skipped, saying why, when crabbox, sshd, ssh-keygen or rsync is missing.
func TestRealCrabbox(t *testing.T) {
	bin := realCrabbox(t)
	target := startSSHD(t)
	files := map[string]string{
		"a.txt":                   "base\n",
		"tool.sh":                 "#!/bin/sh\necho tool\n",
		"link":                    "->a.txt",
		"gone.txt":                "gone\n",
		"node_modules/m/index.js": "m\n",
		"web/.cache/c":            "c\n",
		".crabboxignore":          "a.txt\n",
		".crabbox.yaml":           "provider: aws\n",
	}
	w := newWorld(t, files, "tool.sh")
	p := Provider{
		Bin: bin, CrabboxProvider: "ssh", SandboxedProviders: []string{"ssh"}, testOnlyStaticSSH: true,
		PassEnv: []string{"CRABBOX_STATIC_HOST", "CRABBOX_STATIC_PORT", "CRABBOX_STATIC_USER", "CRABBOX_SSH_KEY", "CRABBOX_STATIC_WORK_ROOT"},
	}
	for name, value := range target {
		t.Setenv(name, value)
	}
	// Crabbox acts on these over its config file; they must not reach it.
	t.Setenv("CRABBOX_STATIC_ID", "from-the-developer")
	t.Setenv("CRABBOX_PROVIDER", "aws")
	spec := w.spec("0a1b2c3d4e5f")
	prompt := filepath.Join(t.TempDir(), "prompt")
	if err := os.WriteFile(prompt, []byte("fix the bug\nplease\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec.Binds = []sandbox.Bind{{Host: prompt, Sandbox: "/run/lease/prompt"}}

	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatalf("Create: %v", err)
	}
	// The static "box" is this machine: its directory is removed here.
	t.Cleanup(func() { p.Discard(context.Background(), spec); os.RemoveAll(boxDir(spec)) })
	// Static SSH takes no requested ID; the one it chose is not the
	// developer's CRABBOX_STATIC_ID.
	if id, err := p.Identity(spec); err != nil || id != "static_127-0-0-1" {
		t.Fatalf("Identity = %q, %v; want static_127-0-0-1", id, err)
	}

	var out strings.Builder
	proc, err := p.Launch(t.Context(), spec, sandbox.Command{
		Argv: []string{"sh", "-c", `set -e
read a; read b; echo "stdin=$a/$b"
test "$(cat "$LEASE_PROMPT_FILE" | head -1)" = "fix the bug"
test "$(cat a.txt)" = base && test -x tool.sh && test "$(readlink link)" = a.txt
test -e node_modules/m/index.js && test -e web/.cache/c
test "$LEASE_ID" = 0a1b2c3d4e5f && test "$GREETING" = "hello world"
test -z "${CRABBOX_STATIC_HOST:-}${GIT_LEASE_BOX:-}"
test ! -e .crabbox
echo new > new.txt; rm gone.txt; chmod a-x tool.sh; ln -sfn tool.sh link
echo to-stdout; echo to-stderr >&2
exit 3`},
		Env:    []string{"GREETING=hello world", "LEASE_PROMPT_FILE=/run/lease/prompt"},
		Output: &out,
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if err := proc.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	proc.Input().Write([]byte("not the prompt\n"))
	proc.Input().Close()
	exit, err := proc.Wait()
	if err != nil || exit.Code != 3 || exit.Bound != "" {
		t.Fatalf("Wait = %+v, %v; want exit code 3\n%s", exit, err, out.String())
	}
	if got := out.String(); got != "stdin=fix the bug/please\nto-stdout\nto-stderr\n" {
		t.Errorf("the agent's output is %q: want its own streams only, stdout then stderr", got)
	}

	if err := p.Collect(t.Context(), spec); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	got := map[string]string{}
	if err := sandbox.Walk(deltaOf(p, spec), func(e sandbox.Entry) error {
		// What git keeps: the kind, the executable bit, a link's target
		// (the box's umask decides the rest of a new file's mode).
		got[e.Path] = fmt.Sprint(e.Kind, " x=", e.Mode&0o100 != 0, " ", e.Target)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		".crabbox.yaml":           "file x=false ",
		".crabboxignore":          "file x=false ",
		"a.txt":                   "file x=false ",
		"link":                    "symlink x=true tool.sh",
		"new.txt":                 "file x=false ",
		"node_modules":            "directory x=true ",
		"node_modules/m":          "directory x=true ",
		"node_modules/m/index.js": "file x=false ",
		"tool.sh":                 "file x=false ",
		"web":                     "directory x=true ",
		"web/.cache":              "directory x=true ",
		"web/.cache/c":            "file x=false ",
	}
	checkDelta(t, got, want)
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Logf("Discard: %v", err)
	}
}

// realCrabbox finds a real crabbox on PATH, or skips.
func realCrabbox(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("crabbox")
	if err != nil {
		t.Skip("no crabbox on PATH: this contract test runs against the real Crabbox CLI (README, \"Tested against the real program\", says which one was run)")
	}
	for _, tool := range []string{"/usr/sbin/sshd", "ssh-keygen", "ssh", "rsync", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing: this contract test leases a loopback sshd (Debian's openssh-server and rsync)", tool)
		}
	}
	return bin
}

// startSSHD starts sshd on a free loopback port with a throwaway host key,
// letting the current user in with a throwaway key, and returns the
// CRABBOX_* variables that point Crabbox's static-SSH provider at it. sshd
// ends with the test (and with it Crabbox's ssh control masters).
func startSSHD(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	for _, key := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, key)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "user.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	config := fmt.Sprintf("ListenAddress 127.0.0.1:%d\nHostKey %s\nAuthorizedKeysFile %s\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPidFile none\n",
		port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"))
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Server listening on") {
				listening <- true
			}
			t.Logf("sshd: %s", sc.Text())
		}
		listening <- false
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatal("sshd ended before it listened")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sshd did not listen within 30s")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	// Crabbox's ssh keeps a control master for 10 minutes (ControlPersist),
	// with its session on sshd, both outliving sshd's listener: end them.
	// Crabbox 0bba5f7d names the socket /tmp/crabbox-ssh-<first 4 bytes of
	// the SHA-1 of user, key and five empty fields, NUL-joined, in hex>-%C.
	scope := sha1.Sum([]byte(strings.Join([]string{u.Username, filepath.Join(dir, "user"), "", "", "", "", ""}, "\x00")))
	t.Cleanup(func() {
		sockets, _ := filepath.Glob(fmt.Sprintf("/tmp/crabbox-ssh-%x-*", scope[:4]))
		for _, socket := range sockets {
			exec.Command("ssh", "-S", socket, "-O", "exit", "127.0.0.1").Run()
		}
	})
	return map[string]string{
		"CRABBOX_STATIC_HOST":      "127.0.0.1",
		"CRABBOX_STATIC_PORT":      fmt.Sprint(port),
		"CRABBOX_STATIC_USER":      u.Username,
		"CRABBOX_SSH_KEY":          filepath.Join(dir, "user"),
		"CRABBOX_STATIC_WORK_ROOT": filepath.Join(dir, "work"),
	}
}
