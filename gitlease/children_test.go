package gitlease

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSandboxCannotWriteWorkWhenReadOnly: a --read-only agent changes
// nothing in /work by any means (write, create, remove, rename, chmod,
// remount), while its /tmp and home stay its own; the lease's result is
// empty and its output is the evidence.
func TestSandboxCannotWriteWorkWhenReadOnly(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"code.txt": "base\n", "dir/inner.txt": "i\n"}, "")
	script := attempt("overwrite", "echo evil > /work/code.txt") +
		attempt("append", "echo evil >> /work/code.txt") +
		attempt("create", "echo new > /work/new.txt") +
		attempt("mkdir", "mkdir /work/newdir") +
		attempt("remove", "rm /work/code.txt") +
		attempt("rename", "mv /work/dir/inner.txt /work/moved.txt") +
		attempt("chmod", "chmod 777 /work/code.txt") +
		attempt("touch", "touch -d 2000-01-01 /work/code.txt") +
		attempt("remount", "mount -o remount,rw /work") +
		attempt("remount-unshare", "unshare -rm sh -c 'mount -o remount,rw /work && echo x > /work/code.txt'") +
		"echo scratch > /tmp/t && echo home > ~/h && cat /tmp/t ~/h && cat /work/code.txt\n"
	var out bytes.Buffer
	x, err := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, ReadOnly: true, Command: []string{"bash", "-c", script}, Output: &out})
	if x == nil || err != nil {
		t.Fatalf("start: %v\n%s", err, out.String())
	}
	requireBlocked(t, out.String(), "overwrite", "append", "create", "mkdir", "remove", "rename", "chmod", "touch", "remount", "remount-unshare")
	if !strings.HasSuffix(strings.TrimSpace(out.String()), "scratch\nhome\nbase") {
		t.Fatalf("the agent's /tmp and home should be writable and /work its base:\n%s", out.String())
	}
	// The mount attempts are escape attempts, which quarantine the lease.
	if !x.Lease.ReadOnlyWork || x.Lease.State != Quarantined || x.Lease.Result == nil || len(x.Lease.Result.Manifest) != 0 {
		t.Fatalf("a read-only lease: read_only_work %v, state %s, result %+v", x.Lease.ReadOnlyWork, x.Lease.State, x.Lease.Result)
	}
	if log, err := x.Output(); err != nil || !strings.Contains(string(log), "BLOCKED:overwrite") {
		t.Fatalf("the agent's output is not the lease's evidence (%v):\n%s", err, log)
	}
}

// TestSandboxCannotSeeItsParentsSandbox: a child lease started while its
// parent works has a sandbox of its own: it sees neither the parent's
// /work nor its /tmp, its processes or its runtime directory.
func TestSandboxCannotSeeItsParentsSandbox(t *testing.T) {
	gate, err := os.MkdirTemp("/var/tmp", "git-lease-gate-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(gate) // opens the gate too, so the parent never outlives the test
	must(t, os.Chmod(gate, 0o755))
	repo, _ := sandboxRepo(t, map[string]string{"code.txt": "base\n"}, fmt.Sprintf("read_only = [%q]\n", gate))
	const secret = "parent-secret-5f3a"
	parentScript := fmt.Sprintf("echo %s > /work/secret.txt; echo %s > /tmp/secret.txt; until [ -e %s/open ] || [ ! -d %s ]; do sleep 0.05; done; : %s",
		secret, secret, gate, gate, secret)
	done := make(chan *Execution, 1)
	go func() {
		x, _ := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, Command: []string{"bash", "-c", parentScript}})
		done <- x
	}()
	var parent *Execution
	for deadline := time.Now().Add(30 * time.Second); parent == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the parent lease did not start running")
		}
		list, err := List(repo)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 && list[0].Lease.State == Running {
			if _, err := os.Stat(filepath.Join(upperDir(t, list[0]), "secret.txt")); err == nil {
				parent = list[0]
			}
		}
	}
	runs := repo.LeaseDir("runs")
	script := attempt("parent-work", "cat /work/secret.txt") +
		attempt("parent-tmp", "cat /tmp/secret.txt") +
		attempt("parent-upper", "ls "+runs+"/*/sandbox") +
		attempt("parent-proc", splitGrep("cat /proc/*/cmdline", secret)) +
		attempt("find-secret", "find / -xdev -name secret.txt 2>/dev/null | grep -q .")
	var out bytes.Buffer
	child, err := Start(context.Background(), repo, StartOptions{Mode: Sandboxed, Parent: string(parent.Lease.ID), Command: []string{"bash", "-c", script}, Output: &out})
	must(t, os.WriteFile(filepath.Join(gate, "open"), nil, 0o644))
	p := <-done
	if child == nil || err != nil {
		t.Fatalf("the child: %v\n%s", err, out.String())
	}
	requireBlocked(t, out.String(), "parent-work", "parent-tmp", "parent-upper", "parent-proc", "find-secret")
	if child.Lease.Parent != parent.Lease.ID || p == nil {
		t.Fatalf("the child's parent is %q, want %s", child.Lease.Parent, parent.Lease.ID)
	}
	if y, err := Load(repo, parent.Lease.ID); err != nil || len(y.Lease.Children) != 1 || y.Lease.Children[0] != child.Lease.ID {
		t.Fatalf("the parent's record does not name its running child: %v %+v", err, y)
	}
}
