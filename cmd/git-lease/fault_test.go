package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// runLease runs the built git-lease in dir with extra environment and returns
// its combined output and error.
func runLease(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "git-lease"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := runLease(t, dir, nil, args...)
	if err != nil {
		t.Fatalf("git-lease %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// killed reports whether err is the process dying by SIGKILL, as a fault
// point makes it.
func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func faultRepo(t *testing.T) string {
	t.Helper()
	dir := refstest.Repo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_LEASE_TEST_ID_SEED", "")
	return dir
}

type listed struct {
	ID      string            `json:"id"`
	State   gitlease.State    `json:"state"`
	Cleanup *gitlease.Cleanup `json:"cleanup"`
}

func leases(t *testing.T, dir string) []listed {
	t.Helper()
	var out []listed
	if err := json.Unmarshal([]byte(mustRun(t, dir, "ls", "--json")), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// subject matches a log entry: a transition "<from> -> <to>" or an event
// "<state>: <event>", which stays in its state.
var subject = regexp.MustCompile(`^lease ([0-9a-f]{12}): (\w+)(?: -> (\w+)|: [a-z-]+)$`)

// checkConsistent checks what the issue asks after every crash and repair:
// every lease in a legal state with a log of legal transitions, one log
// and one branch per lease, at most one worktree per lease, no process of
// the crashed run left, and a second reconcile that changes nothing.
func checkConsistent(t *testing.T, dir, marker string) []listed {
	t.Helper()
	all := leases(t, dir)
	for _, l := range all {
		log := refstest.Git(t, dir, "log", "--reverse", "--format=%s", "refs/leases/"+l.ID)
		prev := gitlease.New
		for _, line := range strings.Split(log, "\n") {
			m := subject.FindStringSubmatch(line)
			if m == nil || m[1] != l.ID || gitlease.State(m[2]) != prev {
				t.Fatalf("lease %s: log entry %q does not follow %s:\n%s", l.ID, line, prev, log)
			}
			from, to := gitlease.State(m[2]), gitlease.State(m[3])
			if to == "" {
				to = from
			}
			if from != to && !gitlease.CanMove(from, to) {
				t.Fatalf("lease %s: illegal transition %s -> %s", l.ID, from, to)
			}
			prev = to
		}
		if prev != l.State {
			t.Fatalf("lease %s: log ends at %s, record says %s", l.ID, prev, l.State)
		}
	}
	logs := refstest.Git(t, dir, "for-each-ref", "--format=%(refname)", "refs/leases/")
	branches := refstest.Git(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/lease/")
	if n := len(nonEmpty(logs)); n != len(all) {
		t.Fatalf("%d logs for %d leases:\n%s", n, len(all), logs)
	}
	if n := len(nonEmpty(branches)); n != len(all) {
		t.Fatalf("%d lease branches for %d leases:\n%s", n, len(all), branches)
	}
	if wts := strings.Count(refstest.Git(t, dir, "worktree", "list", "--porcelain"), "worktree "); wts > 1+len(all) {
		t.Fatalf("%d worktrees for %d leases", wts, len(all))
	}
	if marker != "" {
		// They die with the crashed git-lease; a busy machine may take a
		// moment to reap them.
		waitWithin(t, "the crashed run's processes to die", 5*time.Second, func() bool { return len(processesWith(marker)) == 0 })
	}
	before := refstest.Git(t, dir, "for-each-ref")
	if out := mustRun(t, dir, "reconcile"); !strings.Contains(out, "nothing to repair") {
		t.Fatalf("a second reconcile repaired something:\n%s", out)
	}
	if after := refstest.Git(t, dir, "for-each-ref"); after != before {
		t.Fatalf("a second reconcile changed refs")
	}
	return all
}

func nonEmpty(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// processesWith lists processes whose command line contains s.
func processesWith(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestStartCrashAtEachStepIsRepaired(t *testing.T) {
	cases := []struct{ point, state string }{
		{"start:provisioning", "failed"},
		{"start:running", "failed"},
		{"start:collecting", "review"},
		{"start:verifying", "review"},
		{"start:review", "review"},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			dir := faultRepo(t)
			marker := fmt.Sprintf("fault-marker-%d", time.Now().UnixNano())
			out, err := runLease(t, dir, []string{"GIT_LEASE_FAULT=" + tc.point}, "start", "-q", "--", "sh", "-c", "echo "+marker+" > marker.txt")
			if !killed(err) {
				t.Fatalf("start did not die at %s: %v\n%s", tc.point, err, out)
			}
			mustRun(t, dir, "reconcile")
			all := checkConsistent(t, dir, marker)
			if len(all) != 1 || string(all[0].State) != tc.state {
				t.Fatalf("after reconcile: %+v, want one lease %s", all, tc.state)
			}
			if tc.state == "review" {
				wt := filepath.Join(dir, ".git", "lease", "worktrees", all[0].ID, "marker.txt")
				if b, err := os.ReadFile(wt); err != nil || strings.TrimSpace(string(b)) != marker {
					t.Fatalf("the review worktree lacks the result: %q %v", b, err)
				}
				mustRun(t, dir, "review", all[0].ID)
			}
			cleaned := mustRun(t, dir, "cleanup", "--all")
			if !strings.Contains(cleaned, "cleanup confirmed") {
				t.Fatalf("cleanup after repair:\n%s", cleaned)
			}
			for _, p := range []string{"runs", "worktrees"} {
				left, _ := os.ReadDir(filepath.Join(dir, ".git", "lease", p))
				for _, e := range left {
					if e.Name() != ".lock" {
						t.Fatalf(".git/lease/%s still holds %s after cleanup", p, e.Name())
					}
				}
			}
			// Exported bases stay for later leases (git lease gc evicts
			// them), with no lease counted as using them.
			if users, _ := filepath.Glob(filepath.Join(dir, ".git", "lease", "bases", "*", "users", "*")); len(users) != 0 {
				t.Fatalf("bases still count users after cleanup: %v", users)
			}
		})
	}
}

func startLease(t *testing.T, dir, script string) string {
	t.Helper()
	return leaseID(mustRun(t, dir, "start", "-q", "--", "sh", "-c", script))
}

// leaseID is the lease ID start printed: the last line of its output that
// is one ("" if none is). An error may follow it.
func leaseID(out string) string {
	lines := nonEmpty(out)
	for i := len(lines) - 1; i >= 0; i-- {
		if id, err := refs.ParseID(strings.TrimSpace(lines[i])); err == nil {
			return string(id)
		}
	}
	return ""
}

func TestApplyCrashIsRepaired(t *testing.T) {
	t.Run("before the transaction", func(t *testing.T) {
		dir := faultRepo(t)
		id := startLease(t, dir, "echo changed > a.txt")
		main := refstest.Git(t, dir, "rev-parse", "main")
		if _, err := runLease(t, dir, []string{"GIT_LEASE_FAULT=apply:prepared"}, "apply", id); err == nil {
			t.Fatal("apply did not die")
		}
		if now := refstest.Git(t, dir, "rev-parse", "main"); now != main {
			t.Fatalf("main moved before the transaction")
		}
		checkConsistent(t, dir, "")
		mustRun(t, dir, "apply", id)
	})
	t.Run("after the transaction, before the checkout update", func(t *testing.T) {
		dir := faultRepo(t)
		id := startLease(t, dir, "echo changed > a.txt")
		if _, err := runLease(t, dir, []string{"GIT_LEASE_FAULT=apply:committed"}, "apply", id); !killed(err) {
			t.Fatalf("apply did not die: %v", err)
		}
		other := startLease(t, dir, "echo other > b.txt") // on main as the crash left it
		if out, err := runLease(t, dir, nil, "apply", "--onto", "main", other); err == nil || !strings.Contains(out, "run git lease reconcile") {
			t.Fatalf("an apply onto the checkout the crash left behind: %v\n%s", err, out)
		}
		out := mustRun(t, dir, "reconcile")
		if !strings.Contains(out, "finished updating the checkout") {
			t.Fatalf("reconcile did not finish the apply:\n%s", out)
		}
		if st := refstest.Git(t, dir, "status", "--porcelain"); st != "" {
			t.Fatalf("the checkout is not clean after the repair:\n%s", st)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "changed\n" {
			t.Fatalf("a.txt = %q", b)
		}
		checkConsistent(t, dir, "")
	})
}

func TestCleanupCrashIsRetried(t *testing.T) {
	for _, point := range []string{"cleanup:sandbox", "cleanup:worktree"} {
		t.Run(point, func(t *testing.T) {
			dir := faultRepo(t)
			id := startLease(t, dir, "echo changed > a.txt")
			mustRun(t, dir, "reject", id)
			if _, err := runLease(t, dir, []string{"GIT_LEASE_FAULT=" + point}, "cleanup", id); !killed(err) {
				t.Fatalf("cleanup did not die: %v", err)
			}
			if l := leases(t, dir)[0]; l.Cleanup == nil || l.Cleanup.State != gitlease.CleanupPending {
				t.Fatalf("a cleanup cut short should be pending: %+v", l.Cleanup)
			}
			if out := mustRun(t, dir, "reconcile"); !strings.Contains(out, "retried cleanup: confirmed") {
				t.Fatalf("reconcile did not retry the cleanup:\n%s", out)
			}
			checkConsistent(t, dir, "")
		})
	}
}

func TestStaleApplyIsRefusedAndChangesNothing(t *testing.T) {
	dir := faultRepo(t)
	id := startLease(t, dir, "echo changed > a.txt")
	refstest.Write(t, dir, map[string]string{"c.txt": "someone else"})
	refstest.Git(t, dir, "add", "c.txt")
	refstest.Git(t, dir, "commit", "-q", "-m", "moved")
	before := refstest.Git(t, dir, "for-each-ref")
	out, err := runLease(t, dir, nil, "apply", id)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitConflict || !strings.Contains(out, "git lease rebase") {
		t.Fatalf("stale apply: %v\n%s", err, out)
	}
	if after := refstest.Git(t, dir, "for-each-ref"); after != before {
		t.Fatalf("a refused apply changed refs:\n%s\nwas:\n%s", after, before)
	}
}

func TestHumanEditSurvivesCleanupAndCleanupIsIdempotent(t *testing.T) {
	dir := faultRepo(t)
	id := startLease(t, dir, "echo changed > a.txt")
	edit := filepath.Join(dir, ".git", "lease", "worktrees", id, "notes.txt")
	if err := os.WriteFile(edit, []byte("a reviewer's note"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := mustRun(t, dir, "cleanup", "--json", id)
	second := mustRun(t, dir, "cleanup", "--json", id)
	if b, err := os.ReadFile(edit); err != nil || string(b) != "a reviewer's note" {
		t.Fatalf("cleanup lost a human edit: %v", err)
	}
	var a, b []struct {
		Changed bool
		Cleanup gitlease.Cleanup
	}
	if err := errors.Join(json.Unmarshal([]byte(first), &a), json.Unmarshal([]byte(second), &b)); err != nil {
		t.Fatalf("cleanup --json: %v\n%s\n%s", err, first, second)
	}
	if len(a) != 1 || len(b) != 1 || !a[0].Changed || a[0].Cleanup.State != b[0].Cleanup.State || b[0].Changed {
		t.Fatalf("cleanup twice:\n%s\n%s", first, second)
	}
	if !strings.Contains(first, `"kept"`) {
		t.Fatalf("the receipt should say the worktree was kept:\n%s", first)
	}
}

func TestConcurrentAppliesOneWins(t *testing.T) {
	dir := faultRepo(t)
	id1 := startLease(t, dir, "echo one > a.txt")
	id2 := startLease(t, dir, "echo two > b.txt")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	outs := make([]string, 2)
	for i, id := range []string{id1, id2} {
		wg.Add(1)
		go func(i int, id string) {
			defer wg.Done()
			outs[i], errs[i] = runLease(t, dir, nil, "apply", "--onto", "main", id)
		}(i, id)
	}
	wg.Wait()
	wins := 0
	for i := range errs {
		if errs[i] == nil {
			wins++
		} else if !strings.Contains(outs[i], "moved") && !strings.Contains(outs[i], "ref changed") && !strings.Contains(outs[i], "another git process") {
			t.Fatalf("the losing apply gave an unclear error: %s", outs[i])
		}
	}
	if wins != 1 {
		t.Fatalf("%d applies won:\n%s\n%s", wins, outs[0], outs[1])
	}
}

// An apply waits while another holds the repository's apply lock (from
// reading the target to updating the checkout), so that the loser of two
// applies sees the target moved, never a checkout caught mid-update.
func TestAppliesTakeTurns(t *testing.T) {
	dir := faultRepo(t)
	id := startLease(t, dir, "echo changed > a.txt")
	lock, err := os.OpenFile(filepath.Join(dir, ".git", "lease", "apply.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	main := refstest.Git(t, dir, "rev-parse", "main")
	apply := exec.Command(filepath.Join(binDir, "git-lease"), "apply", id)
	apply.Dir = dir
	var out strings.Builder
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := apply.Wait()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out.String())
		}
		done <- err
	}()
	// The kernel lists a process waiting for a flock as "-> FLOCK … pid".
	waiting := regexp.MustCompile(fmt.Sprintf(`(?m)-> FLOCK +ADVISORY +WRITE +%d `, apply.Process.Pid))
	waitFor(t, "apply to wait for the lock", func() bool {
		select {
		case err := <-done:
			t.Fatalf("apply finished while another held the apply lock: %v", err)
		default:
		}
		b, _ := os.ReadFile("/proc/locks")
		return waiting.Match(b)
	})
	if now := refstest.Git(t, dir, "rev-parse", "main"); now != main {
		t.Fatal("main moved while another apply held the lock")
	}
	lock.Close()
	if err := <-done; err != nil {
		t.Fatalf("apply after the lock was released: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "changed\n" {
		t.Fatalf("the checkout has a.txt = %q after apply", b)
	}
}

func TestConcurrentStartsGetDistinctLeases(t *testing.T) {
	dir := faultRepo(t)
	var wg sync.WaitGroup
	ids := make([]string, 3)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := runLease(t, dir, nil, "start", "-q", "--", "sh", "-c", fmt.Sprintf("echo %d > f%d.txt", i, i))
			if err != nil {
				t.Errorf("start %d: %v\n%s", i, err, out)
				return
			}
			ids[i] = leaseID(out)
		}(i)
	}
	wg.Wait()
	all := checkConsistent(t, dir, "")
	if len(all) != 3 || ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Fatalf("three starts gave %v and leases %+v", ids, all)
	}
	for _, l := range all {
		if l.State != gitlease.Review {
			t.Fatalf("lease %s is %s", l.ID, l.State)
		}
	}
}
