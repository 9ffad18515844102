// Fault tests of what a lease needs from the machine: disk space for its
// log and result, and the checkout's index for apply.

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs/refstest"
)

// smallObjectStore puts the object database of the repository at dir on a
// tmpfs of size (the real kernel's "no space left on device", not a fake),
// with the objects it had, and returns a function that resizes it. Only
// root can mount: others skip.
func smallObjectStore(t *testing.T, dir, size string) (resize func(string)) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("the disk-full tests mount a small tmpfs: run them as root (scripts/test.sh in CI does)")
	}
	objects := filepath.Join(dir, ".git", "objects")
	saved := filepath.Join(t.TempDir(), "objects")
	mount := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("cp", "-a", objects, saved).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	mount("-t", "tmpfs", "-o", "size="+size, "tmpfs", objects)
	t.Cleanup(func() { exec.Command("umount", "-l", objects).Run() })
	if out, err := exec.Command("cp", "-a", saved+"/.", objects).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return func(size string) { mount("-o", "remount,size="+size, objects) }
}

// TestDiskFullDuringCollectionKeepsTheWork: the disk fills while the
// result is stored. Nothing is recorded failed: the lease stays collecting,
// its log whole, the agent's work in its sandbox; the error says to free
// space and run reconcile, which then collects it, once.
func TestDiskFullDuringCollectionKeepsTheWork(t *testing.T) {
	dir := faultRepo(t)
	resize := smallObjectStore(t, dir, "1m")
	out, err := runLease(t, dir, nil, "start", "-q", "--", "sh", "-c", "head -c 3000000 /dev/urandom > big.bin; echo small > small.txt")
	id := leaseID(out)
	if err == nil || id == "" || !strings.Contains(out, "no space left on device") || !strings.Contains(out, "free disk space, then run git lease reconcile") {
		t.Fatalf("start on a full disk: %v\n%s", err, out)
	}
	if l := record(t, dir, id); l.State != gitlease.Collecting {
		t.Fatalf("after the disk filled: %s (%s)", l.State, l.Reason)
	}
	mustRun(t, dir, "verify", id)
	if ls := mustRun(t, dir, "ls"); !strings.Contains(ls, id+"  collecting") {
		t.Fatalf("ls does not list the lease to repair:\n%s", ls)
	}
	resize("64m")
	if out := mustRun(t, dir, "reconcile"); !strings.Contains(out, "resumed collection") {
		t.Fatalf("reconcile once there is space:\n%s", out)
	}
	l := record(t, dir, id)
	if l.State != gitlease.Review || len(l.Result.Manifest) != 2 || l.Result.Manifest[0].Path != "big.bin" {
		t.Fatalf("after reconcile: %s %+v", l.State, l.Result)
	}
	mustRun(t, dir, "verify", id)
	checkConsistent(t, dir, "")
}

// TestDiskFullDuringALogWriteLosesNothing: the disk is full when the
// runner records that its agent is done. The log keeps every entry written
// before (and no half one), the runner says what to do, and once there is
// space reconcile collects what the agent left into a partial result that
// collect --partial takes to review.
func TestDiskFullDuringALogWriteLosesNothing(t *testing.T) {
	dir := faultRepo(t)
	gate, open := agentGate(t)
	resize := smallObjectStore(t, dir, "2m")
	id := startDetached(t, dir, "--", "sh", "-c", gate+"; echo done > d.txt")
	waitFor(t, "the agent to run", func() bool { return record(t, dir, id).State == gitlease.Running })
	filler := filepath.Join(dir, ".git", "objects", "filler")
	if err := os.WriteFile(filler, make([]byte, 4<<20), 0o600); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("filling the object store: %v", err)
	}
	// Where the log is once the disk is full (the runner may have added
	// an event between running and now).
	before := refstest.Git(t, dir, "rev-parse", "refs/leases/"+id)
	open()
	waitFor(t, "the runner to stop", func() bool {
		out, _ := runLease(t, dir, nil, "wait", "--timeout", "1s", id)
		return strings.Contains(out, "nothing runs it")
	})
	runnerLog, _ := os.ReadFile(filepath.Join(dir, ".git", "lease", "runs", id, "runner.log"))
	if !strings.Contains(string(runnerLog), "no space left on device") || !strings.Contains(string(runnerLog), "git lease reconcile") {
		t.Fatalf("the runner does not say the disk is full and what to do:\n%s", runnerLog)
	}
	if after := refstest.Git(t, dir, "rev-parse", "refs/leases/"+id); after != before {
		t.Fatalf("the log moved on a full disk")
	}
	os.Remove(filler)
	resize("64m")
	mustRun(t, dir, "verify", id)
	if out := mustRun(t, dir, "reconcile"); !strings.Contains(out, "collected what it left") {
		t.Fatalf("reconcile once there is space:\n%s", out)
	}
	mustRun(t, dir, "collect", "--partial", id)
	l := record(t, dir, id)
	if l.State != gitlease.Review || len(l.Result.Manifest) != 1 || l.Result.Manifest[0].Path != "d.txt" {
		t.Fatalf("after collect --partial: %s %+v", l.State, l.Result)
	}
	checkConsistent(t, dir, "")
}

// TestApplyWithTheIndexLocked: another git process holds the checkout's
// index.lock when apply would update the checkout. Apply refuses before it
// records anything, saying why and what to do; once the lock is gone it
// applies, once.
func TestApplyWithTheIndexLocked(t *testing.T) {
	dir := faultRepo(t)
	id := startLease(t, dir, "echo changed > a.txt")
	lock := filepath.Join(dir, ".git", "index.lock")
	writeFile(t, lock, "", 0o644)
	log := refstest.Git(t, dir, "rev-parse", "refs/leases/"+id)
	main := refstest.Git(t, dir, "rev-parse", "main")
	out, err := runLease(t, dir, nil, "apply", id)
	if err == nil || !strings.Contains(out, "index.lock") || !strings.Contains(out, "apply again") {
		t.Fatalf("apply with the index locked: %v\n%s", err, out)
	}
	if refstest.Git(t, dir, "rev-parse", "refs/leases/"+id) != log || refstest.Git(t, dir, "rev-parse", "main") != main {
		t.Fatalf("a refused apply moved the log or main")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "a\n" {
		t.Fatalf("a refused apply wrote the checkout: a.txt = %q", b)
	}
	os.Remove(lock)
	mustRun(t, dir, "apply", id)
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "changed\n" {
		t.Fatalf("apply once the lock is gone: a.txt = %q", b)
	}
	if l := record(t, dir, id); l.State != gitlease.Applied {
		t.Fatalf("state %s", l.State)
	}
	checkConsistent(t, dir, "")
}
