package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs/refstest"
)

// crabboxRepo is faultRepo with trusted policy selecting crabbox (the
// stand-in, first on PATH) and a fresh stand-in provider.
func crabboxRepo(t *testing.T) string {
	t.Helper()
	dir := faultRepo(t)
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	policy := "provider = \"crabbox\"\n[crabbox]\nprovider = \"local-container\"\nsandboxed = [\"local-container\"]\n"
	path := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git-lease", "policy.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	standinEnv(t, filepath.Join(t.TempDir(), "cloud"))
	return dir
}

// crabboxLease is the part of a lease's JSON these tests read.
type crabboxLease struct {
	ID       string             `json:"id"`
	State    gitlease.State     `json:"state"`
	Receipts []gitlease.Receipt `json:"receipts"`
}

// onlyLease returns the repository's one lease.
func onlyLease(t *testing.T, dir string) crabboxLease {
	t.Helper()
	var all []crabboxLease
	if err := json.Unmarshal([]byte(mustRun(t, dir, "ls", "--json")), &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("%d leases, want one: %+v", len(all), all)
	}
	return all[0]
}

// calls returns the stand-in's invocations of command.
func calls(t *testing.T, command string) [][]string {
	t.Helper()
	c, err := standinCalls(command)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// downloads returns the crabbox cp calls that copy from a box (the result
// coming back), leaving out the upload of the base and the prompt.
func downloads(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	for _, argv := range calls(t, "cp") {
		if len(argv) >= 2 && strings.HasPrefix(argv[len(argv)-2], "SANDBOX:") {
			out = append(out, argv)
		}
	}
	return out
}

// checkOneBox checks that every crabbox call that names a box named the
// lease's own, and that exactly one box was warmed for it.
func checkOneBox(t *testing.T, id string) {
	t.Helper()
	box := "cbx_" + id
	if warm := calls(t, "warmup"); len(warm) != 1 || !slices.Contains(warm[0], box) {
		t.Fatalf("warmups %v: want exactly one, for %s", warm, box)
	}
	all, err := standinCalls()
	if err != nil {
		t.Fatal(err)
	}
	for _, argv := range all {
		if i := slices.Index(argv, "--id"); i >= 0 && argv[i+1] != box {
			t.Fatalf("crabbox %v names another box than %s", argv, box)
		}
	}
}

// checkBoxBound checks that the lease's record binds its box: one
// provider receipt, for the lease's own box from local-container.
func checkBoxBound(t *testing.T, l crabboxLease) {
	t.Helper()
	var providers []gitlease.Receipt
	for _, r := range l.Receipts {
		if r.Kind == "provider" {
			providers = append(providers, r)
		}
	}
	if len(providers) != 1 {
		t.Fatalf("provider receipts %+v, want one", providers)
	}
	r := providers[0]
	if r.Name != "crabbox" || r.ID != "cbx_"+l.ID || !strings.Contains(r.Detail, "crabbox provider local-container") {
		t.Fatalf("receipt %+v, want the provider crabbox, box cbx_%s from local-container", r, l.ID)
	}
}

// cleanupConfirmed cleans every lease up and checks that the box was
// stopped and confirmed gone, and that nothing was left in the provider.
func cleanupConfirmed(t *testing.T, dir, id string) {
	t.Helper()
	if out := mustRun(t, dir, "cleanup", "--all"); !strings.Contains(out, "cleanup confirmed") || !strings.Contains(out, "crabbox cbx_"+id) {
		t.Fatalf("cleanup:\n%s", out)
	}
	if stops := calls(t, "stop"); len(stops) != 1 || !slices.Contains(stops[0], "cbx_"+id) {
		t.Fatalf("stops %v", stops)
	}
	if left, _ := os.ReadDir(filepath.Join(os.Getenv("STANDIN_CRABBOX_ROOT"), "boxes")); len(left) != 0 {
		t.Fatalf("the provider still holds %d boxes", len(left))
	}
	checkOneBox(t, id)
}

// A crash after the lease recorded running and before the agent was
// released: the box was already bound in the log, no agent ran, reconcile
// fails the lease and keeps the box, and cleanup stops that same box.
func TestCrabboxCrashBeforeReleaseKeepsTheBox(t *testing.T) {
	dir := crabboxRepo(t)
	out, err := runLease(t, dir, []string{"GIT_LEASE_FAULT=start:running"}, "start", "-q", "--", "sh", "-c", "echo x > x.txt")
	if !killed(err) {
		t.Fatalf("start did not die: %v\n%s", err, out)
	}
	l := onlyLease(t, dir)
	if l.State != gitlease.Running {
		t.Fatalf("state %s, want running", l.State)
	}
	checkBoxBound(t, l)
	if runs := calls(t, "run"); len(runs) != 0 {
		t.Fatalf("the agent ran although git-lease died before releasing it: %v", runs)
	}
	mustRun(t, dir, "reconcile")
	checkConsistent(t, dir, "")
	if l := onlyLease(t, dir); l.State != gitlease.Failed {
		t.Fatalf("after reconcile: %s", l.State)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("STANDIN_CRABBOX_ROOT"), "boxes", "cbx_"+l.ID)); err != nil {
		t.Fatalf("reconcile did not keep the box for cleanup: %v", err)
	}
	cleanupConfirmed(t, dir, l.ID)
}

// git-lease killed while the agent runs in its box: crabbox dies with it
// (well before the agent would have ended),
// the box was bound in the log before the run began, reconcile fails the
// lease without warming another box, and cleanup stops the same box.
func TestCrabboxCrashWhileTheAgentRuns(t *testing.T) {
	dir := crabboxRepo(t)
	cmd := exec.Command(filepath.Join(binDir, "git-lease"), "start", "-q", "--", "sh", "-c", "sleep 5; echo late > late.txt")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, "crabbox run", func() bool { return len(calls(t, "run")) == 1 })
	l := onlyLease(t, dir)
	if l.State != gitlease.Running {
		t.Fatalf("state %s while the agent runs", l.State)
	}
	checkBoxBound(t, l)
	cmd.Process.Kill()
	cmd.Wait()
	waitWithin(t, "crabbox to die with git-lease", 3*time.Second, func() bool { return len(processesWith("cbx_"+l.ID)) == 0 })
	mustRun(t, dir, "reconcile")
	checkConsistent(t, dir, "")
	if l := onlyLease(t, dir); l.State != gitlease.Failed {
		t.Fatalf("after reconcile: %s", l.State)
	}
	cleanupConfirmed(t, dir, l.ID)
}

// A crash after the agent ended and before its work was copied back:
// reconcile copies it from the same box and takes the lease to review.
func TestCrabboxCrashBeforeCollectionResumesFromTheBox(t *testing.T) {
	dir := crabboxRepo(t)
	out, err := runLease(t, dir, []string{"GIT_LEASE_FAULT=start:collecting"}, "start", "-q", "--", "sh", "-c", "echo done > done.txt")
	if !killed(err) {
		t.Fatalf("start did not die: %v\n%s", err, out)
	}
	if cps := downloads(t); len(cps) != 0 {
		t.Fatalf("copied back before the fault point: %v", cps)
	}
	resumed(t, dir)
}

// A crash in the middle of a slow copy back: crabbox cp dies with
// git-lease (seconds before the copy would have ended, so it cannot race
// with the next one), and reconcile copies again from the same box.
func TestCrabboxCrashDuringASlowCopyResumesFromTheBox(t *testing.T) {
	dir := crabboxRepo(t)
	t.Setenv("STANDIN_CRABBOX_CP_DELAY", "2s") // per file: the result is one tarball
	cmd := exec.Command(filepath.Join(binDir, "git-lease"), "start", "-q", "--", "sh", "-c", "for f in 1 2 3 4 5 6; do echo $f > f$f.txt; done")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The stand-in logs the call before its first 2 s delay: git-lease
	// dies while crabbox cp is copying.
	waitFor(t, "crabbox cp", func() bool { return len(downloads(t)) == 1 })
	cmd.Process.Kill()
	cmd.Wait()
	id := onlyLease(t, dir).ID
	waitWithin(t, "crabbox cp to die with git-lease", 2*time.Second, func() bool { return len(processesWith("cbx_"+id)) == 0 })
	t.Setenv("STANDIN_CRABBOX_CP_DELAY", "")
	resumed(t, dir)
	if cps := downloads(t); len(cps) != 2 {
		t.Fatalf("%d copies, want the interrupted one and reconcile's", len(cps))
	}
	for f := 1; f <= 6; f++ {
		if got := refstest.Git(t, dir, "show", fmt.Sprintf("lease/%s:f%d.txt", id, f)); got != fmt.Sprint(f) {
			t.Fatalf("f%d.txt in the result: %q", f, got)
		}
	}
}

// resumed reconciles a lease interrupted while collecting and checks that
// it reached review from its own box, then cleans it up.
func resumed(t *testing.T, dir string) {
	t.Helper()
	l := onlyLease(t, dir)
	if l.State != gitlease.Collecting {
		t.Fatalf("state %s, want collecting", l.State)
	}
	if out := mustRun(t, dir, "reconcile"); !strings.Contains(out, "resumed collection") {
		t.Fatalf("reconcile:\n%s", out)
	}
	checkConsistent(t, dir, "")
	l = onlyLease(t, dir)
	if l.State != gitlease.Review {
		t.Fatalf("after reconcile: %s", l.State)
	}
	checkBoxBound(t, l)
	mustRun(t, dir, "review", l.ID)
	cleanupConfirmed(t, dir, l.ID)
}

// waitWithin polls cond for up to within.
func waitWithin(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
