package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Descriptors that git-lease inherits without close-on-exec (from an
// orchestrator, an IDE terminal, make) reach no program it starts: not a
// sandboxed agent, a detached one, nor even a trusted_local agent.
func TestInheritedDescriptorsReachNoAgent(t *testing.T) {
	secret := t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "inherited-secret.txt"), []byte("host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirFile, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer dirFile.Close()
	dir := faultRepo(t)
	// The agent lists the targets of its descriptors and reads through
	// each one that is a directory.
	probe := `for fd in /proc/self/fd/*; do readlink "$fd"; cat "$fd/inherited-secret.txt" 2>/dev/null; done; echo PROBED`
	for _, args := range [][]string{
		{"start", "--", "sh", "-c", probe},
		{"start", "--mode", "trusted_local", "--", "sh", "-c", probe},
		{"start", "-q", "--detach", "--", "sh", "-c", probe}, // the runner is a process of its own
	} {
		cmd := exec.Command(filepath.Join(binDir, "git-lease"), args...)
		cmd.Dir = dir
		cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, nil, nil, nil, dirFile} // fd 10, without close-on-exec
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git-lease %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[1] == "-q" {
			id := leaseID(string(out))
			mustRun(t, dir, "wait", id)
			out = []byte(mustRun(t, dir, "logs", id))
		}
		if !strings.Contains(string(out), "PROBED") {
			t.Fatalf("the probe did not run:\n%s", out)
		}
		if strings.Contains(string(out), secret) || strings.Contains(string(out), "host file") {
			t.Fatalf("git-lease %s: the agent got the inherited descriptor:\n%s", args[1], out)
		}
	}
}
