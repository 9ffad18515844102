package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs/refstest"
)

// runSplit runs git-lease in dir and returns its standard output and
// standard error apart, and its error.
func runSplit(t *testing.T, dir string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "git-lease"), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// junkLease writes a commit with no lease.json at refs/leases/<id>, as a
// fetch from a server without the verifying hook could.
func junkLease(t *testing.T, dir, id string) string {
	t.Helper()
	tree := refstest.Git(t, dir, "rev-parse", "HEAD^{tree}")
	c := refstest.Git(t, dir, "commit-tree", "-m", "junk", tree)
	refstest.Git(t, dir, "update-ref", "refs/leases/"+id, c)
	return c
}

// newerLease rewrites the newest record of lease id as a newer git-lease
// would write it: one more log entry whose lease.json says version 2.
func newerLease(t *testing.T, dir, id string) {
	t.Helper()
	rec := refstest.Git(t, dir, "show", "refs/leases/"+id+":lease.json")
	if !strings.Contains(rec, `"version": 1,`) {
		t.Fatalf("record: %s", rec)
	}
	rec = strings.Replace(rec, `"version": 1,`, `"version": 2, "something_new": {"x": 1},`, 1)
	blob, err := gitIn(dir, nil, rec, "hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatal(err, blob)
	}
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	for _, args := range [][]string{{"read-tree", "refs/leases/" + id}, {"update-index", "--cacheinfo", "100644," + strings.TrimSpace(blob) + ",lease.json"}} {
		if out, err := gitIn(dir, index, "", args...); err != nil {
			t.Fatal(err, out)
		}
	}
	tree, err := gitIn(dir, index, "", "write-tree")
	if err != nil {
		t.Fatal(err, tree)
	}
	msg := "lease " + id + ": review: newer\n\nLease-ID: " + id + "\nLease-State: review\nLease-Event: newer\n"
	c := refstest.Git(t, dir, "commit-tree", "-p", "refs/leases/"+id, "-m", msg, strings.TrimSpace(tree))
	refstest.Git(t, dir, "update-ref", "refs/leases/"+id, c)
}

// TestOneBadRefNeverBreaksTheTool: a junk commit at refs/leases/<id> and a
// record from a newer git-lease leave every command working on the other
// leases; ls names the junk one on standard error, the newer one is shown
// read-only; doctor lists it and gc --broken removes it, noting what it
// removed; fetch keeps a junk log out of refs/leases.
func TestOneBadRefNeverBreaksTheTool(t *testing.T) {
	dir := faultRepo(t)
	good := startLease(t, dir, "echo changed > a.txt")
	newer := startLease(t, dir, "echo other > b.txt")
	newerLease(t, dir, newer)
	const junk = "0123456789ab"
	junkTip := junkLease(t, dir, junk)

	stdout, stderr, err := runSplit(t, dir, "ls")
	if err != nil || !strings.Contains(stdout, good) || !strings.Contains(stdout, newer) || strings.Contains(stdout, junk) {
		t.Fatalf("ls: %v\n%s\n%s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "lease "+junk+": unreadable") || !strings.Contains(stderr, "lease.json") {
		t.Fatalf("ls does not name the broken lease on stderr:\n%s", stderr)
	}
	if !strings.Contains(stdout, "written by a newer git-lease: read-only") {
		t.Fatalf("ls does not mark the newer record:\n%s", stdout)
	}
	stdout, stderr, err = runSplit(t, dir, "ls", "--json")
	var list []struct {
		ID       string `json:"id"`
		ReadOnly bool   `json:"read_only"`
	}
	var broken struct{ Broken []gitlease.Broken }
	if err != nil || json.Unmarshal([]byte(stdout), &list) != nil || json.Unmarshal([]byte(stderr), &broken) != nil {
		t.Fatalf("ls --json: %v\n%s\n%s", err, stdout, stderr)
	}
	if len(list) != 2 || len(broken.Broken) != 1 || string(broken.Broken[0].ID) != junk || broken.Broken[0].Log != junkTip {
		t.Fatalf("ls --json: %+v, broken %+v", list, broken)
	}
	for _, l := range list {
		if l.ReadOnly != (l.ID == newer) {
			t.Fatalf("read_only: %+v", list)
		}
	}

	mustRun(t, dir, "findings")
	mustRun(t, dir, "reconcile")
	mustRun(t, dir, "gc", "--older-than", "0d")
	mustRun(t, dir, "show", newer)
	mustRun(t, dir, "reject", good)
	if out := mustRun(t, dir, "cleanup", "--all"); !strings.Contains(out, good) || strings.Contains(out, newer) {
		t.Fatalf("cleanup --all:\n%s", out)
	}
	if out := mustRun(t, dir, "start", "-q", "--", "sh", "-c", "echo third > c.txt"); leaseID(out) == "" {
		t.Fatalf("start:\n%s", out)
	}
	if out, err := runLease(t, dir, nil, "verify", "--all"); err == nil || !strings.Contains(out, "lease "+good+": ok") || !strings.Contains(out, "lease "+junk+": FAILED") {
		t.Fatalf("verify --all: %v\n%s", err, out)
	}
	if out, err := runLease(t, dir, nil, "reject", newer); err == nil || !strings.Contains(out, "written by a newer git-lease") {
		t.Fatalf("a newer record was changed: %v\n%s", err, out)
	}

	// Share the junk through a server without the verifying hook.
	server := filepath.Join(t.TempDir(), "server.git")
	refstest.Git(t, "", "init", "-q", "--bare", "-b", "main", server)
	refstest.Git(t, dir, "remote", "add", "origin", server)
	refstest.Git(t, dir, "push", "-q", "origin", "main", "refs/leases/"+junk+":refs/leases/"+junk, "refs/leases/"+good+":refs/leases/"+good)
	mate := filepath.Join(t.TempDir(), "mate")
	refstest.Git(t, "", "clone", "-q", server, mate)
	out := mustRun(t, mate, "fetch")
	if !strings.Contains(out, "refs/remotes/origin/leases/"+junk) || !strings.Contains(out, "kept out") || !strings.Contains(out, "1 created") {
		t.Fatalf("fetch of a junk log:\n%s", out)
	}
	if refs := refstest.Git(t, mate, "for-each-ref", "refs/leases/"); strings.Contains(refs, junk) || !strings.Contains(refs, good) {
		t.Fatalf("fetch let the junk log in:\n%s", refs)
	}
	stdout, stderr, err = runSplit(t, mate, "ls", "--remote", "origin")
	if err != nil || !strings.Contains(stdout, good) || !strings.Contains(stderr, "lease "+junk+": unreadable") {
		t.Fatalf("ls --remote does not name the unreadable fetched log: %v\n%s\n%s", err, stdout, stderr)
	}

	if out, err := runLease(t, dir, nil, "doctor"); err == nil || !strings.Contains(out, "broken\t"+junk) || !strings.Contains(out, "newer\t"+newer) {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	if out := mustRun(t, dir, "gc", "--broken"); !strings.Contains(out, "remove broken lease "+junk) {
		t.Fatalf("gc --broken:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "lease", "removed.jsonl")); !strings.Contains(string(b), junkTip) {
		t.Fatalf("gc --broken did not note what it removed: %q", b)
	}
	if refs := refstest.Git(t, dir, "for-each-ref", "refs/leases/"); strings.Contains(refs, junk) {
		t.Fatalf("the junk log is still there:\n%s", refs)
	}
	mustRun(t, dir, "doctor")
}

// TestGCKeepsALeaseWhoseWorktreeHoldsEdits: cleanup keeps a review
// worktree a person edited; gc then keeps the lease (log and branch) and
// says why, and only --force prunes it, noting what it dropped, with the
// person's files left on disk.
func TestGCKeepsALeaseWhoseWorktreeHoldsEdits(t *testing.T) {
	dir := faultRepo(t)
	id := startLease(t, dir, "echo changed > a.txt")
	edit := filepath.Join(dir, ".git", "lease", "worktrees", id, "notes.txt")
	writeFile(t, edit, "a reviewer's note", 0o644)
	mustRun(t, dir, "reject", id)
	if out := mustRun(t, dir, "cleanup", id); !strings.Contains(out, "kept") {
		t.Fatalf("cleanup did not keep the edited worktree:\n%s", out)
	}
	out := mustRun(t, dir, "gc", "--older-than", "0d")
	if !strings.Contains(out, "keep lease "+id+": cleanup kept its review worktree") {
		t.Fatalf("gc does not say it kept the lease:\n%s", out)
	}
	tip := refstest.Git(t, dir, "rev-parse", "refs/leases/"+id)
	refstest.Git(t, dir, "rev-parse", "refs/heads/lease/"+id)
	if out := mustRun(t, dir, "gc", "--older-than", "0d", "--force"); !strings.Contains(out, "prune lease "+id) {
		t.Fatalf("gc --force:\n%s", out)
	}
	if refs := refstest.Git(t, dir, "for-each-ref", "refs/leases/", "refs/heads/lease/"); refs != "" {
		t.Fatalf("gc --force left refs:\n%s", refs)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "lease", "removed.jsonl")); !strings.Contains(string(b), tip) || !strings.Contains(string(b), "gc --force") {
		t.Fatalf("gc --force did not note what it dropped: %q", b)
	}
	if b, err := os.ReadFile(edit); err != nil || string(b) != "a reviewer's note" {
		t.Fatalf("the person's edit is gone: %v", err)
	}
}
