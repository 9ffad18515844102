package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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
	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/bwrap"
	"github.com/git-lease/git-lease/sandbox/herdr"
	"github.com/git-lease/git-lease/sandbox/process"
)

// logEvents lists a lease log's events and transitions, oldest first:
// "provisioning" for a transition to it, "event:prompted" for an event.
func logEvents(t *testing.T, dir, id string) []string {
	t.Helper()
	out := refstest.Git(t, dir, "log", "--reverse", "--format=%s%x09%(trailers:key=Lease-Event,valueonly,separator=)", "refs/leases/"+id)
	var events []string
	for _, line := range strings.Split(out, "\n") {
		subject, event, _ := strings.Cut(line, "\t")
		if event != "" {
			events = append(events, "event:"+event)
			continue
		}
		if i := strings.LastIndex(subject, "-> "); i >= 0 {
			events = append(events, subject[i+3:])
		}
	}
	return events
}

func record(t *testing.T, dir, id string) *gitlease.Lease {
	t.Helper()
	var l gitlease.Lease
	if err := json.Unmarshal([]byte(mustRun(t, dir, "show", "--json", id)), &l); err != nil {
		t.Fatal(err)
	}
	return &l
}

func startDetached(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return leaseID(mustRun(t, dir, append([]string{"start", "-q", "--detach"}, args...)...))
}

// waitFor polls until cond holds or fails the test after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// agentGate is a gate a sandboxed agent waits at until the test opens it:
// a directory outside $HOME that trusted policy shares read-only with every
// lease (read_only), in which open creates the file the agent waits for.
// Removing the directory when the test ends opens it too, so that no agent
// outlives a failed test. It sets the policy of the test's
// XDG_CONFIG_HOME (faultRepo's).
func agentGate(t *testing.T) (wait string, open func()) {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "git-lease-gate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the sandbox's uid reads it
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git-lease", "policy.toml"), fmt.Sprintf("read_only = [%q]\n", dir), 0o644)
	gate := filepath.Join(dir, "open")
	return fmt.Sprintf("until [ -e %s ] || [ ! -d %s ]; do sleep 0.05; done", gate, dir), func() { writeFile(t, gate, "", 0o644) }
}

// TestDetachedLifecycleEvents runs a detached headless lease whose agent
// reads its prompt, reports itself blocked with a question and finishes;
// the CLI that started it is gone, and a new git-lease process reconnects
// to the same runner with wait. Every event is in the log, in order, and
// the prompt arrived only after the sandbox and the runner were recorded.
func TestDetachedLifecycleEvents(t *testing.T) {
	dir := faultRepo(t)
	gate, open := agentGate(t)
	agent := `read p; echo "prompt: $p"; echo "blocked: may I proceed?" > "$LEASE_STATE_FILE"; ` + gate + `; ` +
		`echo working > "$LEASE_STATE_FILE"; echo done > result.txt`
	id := startDetached(t, dir, "--prompt", "fix it", "--", "sh", "-c", agent)
	waitFor(t, "the agent to read its prompt", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, ".git", "lease", "runs", id, "agent.log"))
		return strings.Contains(string(b), "prompt: fix it")
	})
	// The prompt has arrived: the sandbox and the runner must be recorded.
	events := logEvents(t, dir, id)
	prompted := indexOf(events, "event:prompted")
	running := indexOf(events, "running")
	if running < 0 || (prompted >= 0 && prompted < running) {
		t.Fatalf("the prompt came before the identities were recorded: %v", events)
	}
	l := record(t, dir, id)
	if l.Supervisor == nil || l.Supervisor.Supervisor != "headless" || len(l.Receipts) < 2 {
		t.Fatalf("identities not bound before the prompt: %+v %+v", l.Supervisor, l.Receipts)
	}
	waitFor(t, "the agent to say it is blocked", func() bool {
		l := record(t, dir, id)
		return l.Activity != nil && l.Activity.State == "blocked" && l.Activity.Message == "may I proceed?"
	})
	if ls := mustRun(t, dir, "ls"); !strings.Contains(ls, "running/blocked") || !strings.Contains(ls, "may I proceed?") {
		t.Fatalf("ls does not show the blocked agent:\n%s", ls)
	}
	runnerFile := filepath.Join(dir, ".git", "lease", "runs", id, "runner.json")
	runner, _ := os.ReadFile(runnerFile)
	// A new process reconnects to the same runner while the agent waits;
	// once the runner has recorded that, the agent may finish.
	waited := make(chan error, 1)
	go func() {
		out, err := runLease(t, dir, nil, "wait", id)
		if err != nil {
			err = fmt.Errorf("%v\n%s", err, out)
		}
		waited <- err
	}()
	waitFor(t, "wait to reconnect", func() bool { return indexOf(logEvents(t, dir, id), "event:reconnected") >= 0 })
	open()
	if err := <-waited; err != nil {
		t.Fatalf("git-lease wait: %v", err)
	}
	l = record(t, dir, id)
	if after, _ := os.ReadFile(runnerFile); l.State != gitlease.Review || string(after) != string(runner) || len(runner) == 0 {
		t.Fatalf("after wait: %s, runner %s (was %s)", l.State, after, runner)
	}
	// In this order, with reconnected while the agent was blocked.
	got := logEvents(t, dir, id)
	want := []string{"provisioning", "event:supervisor-bound", "running", "event:working", "event:prompted", "event:blocked",
		"event:working", "event:done", "collecting", "verifying", "review"}
	without := []string{}
	for _, e := range got {
		if e != "event:reconnected" {
			without = append(without, e)
		}
	}
	if strings.Join(without, " ") != strings.Join(want, " ") {
		t.Fatalf("events:\n%v\nwant (besides reconnected):\n%v", got, want)
	}
	if r := indexOf(got, "event:reconnected"); r < indexOf(got, "running") || r > indexOf(got, "event:done") {
		t.Fatalf("no reconnected event while the agent ran: %v", got)
	}
	if all := leases(t, dir); len(all) != 1 {
		t.Fatalf("reconnecting created leases: %+v", all)
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func TestCancelKeepsThePartialDeltaUnmaterialized(t *testing.T) {
	dir := faultRepo(t)
	id := startDetached(t, dir, "--", "sh", "-c", `echo partial > part.txt; trap 'echo interrupted; exit 3' INT; while :; do sleep 0.1; done`)
	waitFor(t, "the agent to start", func() bool { return record(t, dir, id).State == gitlease.Running })
	began := time.Now()
	mustRun(t, dir, "cancel", "--grace", "20s", id)
	if time.Since(began) > 10*time.Second {
		t.Fatalf("the graceful interrupt was not delivered: cancel took %s", time.Since(began))
	}
	l := record(t, dir, id)
	if l.State != gitlease.Canceled {
		t.Fatalf("state %s", l.State)
	}
	if out := mustRun(t, dir, "logs", id); !strings.Contains(out, "interrupted") {
		t.Fatalf("the agent did not get SIGINT:\n%s", out)
	}
	if delta := refstest.Git(t, dir, "show", "refs/leases/"+id+":result/delta.txt"); !strings.Contains(delta, `"part.txt"`) {
		t.Fatalf("the partial delta is not listed:\n%s", delta)
	}
	if tip := refstest.Git(t, dir, "rev-parse", "lease/"+id); tip != l.Base {
		t.Fatalf("a canceled lease's branch moved")
	}
	mustRun(t, dir, "collect", "--partial", id)
	if l := record(t, dir, id); l.State != gitlease.Review || l.Result.Manifest[0].Path != "part.txt" {
		t.Fatalf("collect --partial: %s %+v", l.State, l.Result)
	}
}

// herdrServer runs the Herdr stand-in on a socket for the test and
// returns the file where it logs every method it is asked.
func herdrServer(t *testing.T) (socket, requests string) {
	t.Helper()
	d := t.TempDir()
	socket, requests = filepath.Join(d, "herdr.sock"), filepath.Join(d, "requests")
	cmd := exec.Command(filepath.Join(binDir, "herdr-standin"), "-socket", socket, "-log", requests)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, "the herdr stand-in", func() bool { _, err := os.Stat(socket); return err == nil })
	t.Setenv("HERDR_SOCKET_PATH", socket)
	return socket, requests
}

func noFocusCalls(t *testing.T, requests string) {
	t.Helper()
	b, err := os.ReadFile(requests)
	if err != nil || len(b) == 0 {
		t.Fatalf("the stand-in logged no requests (%v): nothing to check for focus", err)
	}
	if strings.Contains(string(b), "focus") {
		t.Fatalf("a focus method was called:\n%s", b)
	}
}

func TestTwoHerdrLeasesAtOnceNeverTakeFocus(t *testing.T) {
	dir := faultRepo(t)
	_, requests := herdrServer(t)
	var wg sync.WaitGroup
	ids := make([]string, 2)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := runLease(t, dir, nil, "start", "-q", "--supervisor", "herdr", "--prompt", "p", "--",
				"sh", "-c", `read p; echo "blocked: ok?" > "$LEASE_STATE_FILE"; echo `+string(rune('a'+i))+` > f`+string(rune('a'+i)))
			if err != nil {
				t.Errorf("start %d: %v\n%s", i, err, out)
				return
			}
			ids[i] = leaseID(out)
		}(i)
	}
	wg.Wait()
	panes := map[string]bool{}
	for _, id := range ids {
		l := record(t, dir, id)
		if l.State != gitlease.Review || l.Supervisor == nil || l.Supervisor.Supervisor != "herdr" || l.Supervisor.Label != "lease:"+id {
			t.Fatalf("lease %s: %s %+v", id, l.State, l.Supervisor)
		}
		panes[l.Supervisor.PaneID] = true
		if events := logEvents(t, dir, id); indexOf(events, "event:blocked") < 0 || indexOf(events, "event:done") < 0 {
			t.Fatalf("lease %s events: %v", id, events)
		}
	}
	if len(panes) != 2 {
		t.Fatalf("two leases shared a pane: %v", panes)
	}
	noFocusCalls(t, requests)
	mustRun(t, dir, "attach", ids[0]) // the one focus call, because the user asked
	if b, _ := os.ReadFile(requests); strings.Count(string(b), "pane.focus") != 1 {
		t.Fatalf("attach should make exactly one focus call:\n%s", b)
	}
	mustRun(t, dir, "cleanup", "--all")
	b, _ := os.ReadFile(requests)
	if strings.Count(string(b), "pane.close") != 2 {
		t.Fatalf("cleanup did not close both panes:\n%s", b)
	}
	if out, err := runLease(t, dir, nil, "attach", ids[1]); err == nil || !strings.Contains(out, "gone") {
		t.Fatalf("attach to a closed pane: %v\n%s", err, out)
	}
}

// standinCall asks the Herdr stand-in at socket to act (a restart, a live
// handoff) and waits for its answer.
func standinCall(t *testing.T, socket, method string) {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, `{"id":"t","method":%q,"params":{}}`+"\n", method)
	bufio.NewReader(conn).ReadString('\n')
}

func TestHerdrRestartFailsTheLeaseAndKeepsItsWork(t *testing.T) {
	dir := faultRepo(t)
	socket, requests := herdrServer(t)
	id := startDetached(t, dir, "--supervisor", "herdr", "--", "sh", "-c", `echo work > w.txt; sleep 60`)
	waitFor(t, "the agent to run", func() bool { return record(t, dir, id).State == gitlease.Running })
	// Restart the stand-in's panes, as a Herdr restart does: pane
	// processes die, terminals get new IDs.
	standinCall(t, socket, "standin.restart")
	waitFor(t, "the runner to be gone", func() bool {
		out, _ := runLease(t, dir, nil, "wait", "--timeout", "1s", id)
		return strings.Contains(out, "nothing runs it")
	})
	repair := mustRun(t, dir, "reconcile")
	l := record(t, dir, id)
	if l.State != gitlease.Failed || !strings.Contains(l.Reason, "herdr") {
		t.Fatalf("after a herdr restart: %s %q\n%s", l.State, l.Reason, repair)
	}
	if _, err := os.Stat(filepath.Join(upperDir(t, filepath.Join(dir, ".git", "lease", "runs", id)), "w.txt")); err != nil {
		t.Fatalf("the agent's work was not kept: %v", err)
	}
	// The restart left the lease's pane with a new terminal: cleanup
	// closes it.
	mustRun(t, dir, "cleanup", id)
	if _, err := (&herdr.Client{Socket: socket}).Get(context.Background(), l.Supervisor.PaneID); !errors.Is(err, herdr.ErrPaneNotFound) {
		t.Fatalf("the lease's pane is still there after cleanup: %v", err)
	}
	noFocusCalls(t, requests)
}

// TestHerdrLiveHandoffKeepsTheLeaseRunning: herdr update --handoff keeps
// the runner's process but gives its pane a new terminal ID. The lease runs
// on to its result, reconcile leaves it alone, and cleanup still closes its
// pane (a lease that took the new terminal for a dead runner would leave
// the pane and its runner behind).
func TestHerdrLiveHandoffKeepsTheLeaseRunning(t *testing.T) {
	dir := faultRepo(t)
	socket, requests := herdrServer(t)
	id := startDetached(t, dir, "--supervisor", "herdr", "--", "sh", "-c", `echo work > w.txt; sleep 3`)
	waitFor(t, "the agent to run", func() bool { return record(t, dir, id).State == gitlease.Running })
	// A wait that is watching the pane's event stream when the handoff
	// drops it subscribes again and still sees the lease to its end.
	waited := make(chan error, 1)
	go func() {
		out, err := runLease(t, dir, nil, "wait", "--timeout", "30s", id)
		if err != nil {
			err = fmt.Errorf("%v\n%s", err, out)
		}
		waited <- err
	}()
	waitFor(t, "the wait to subscribe", func() bool {
		b, _ := os.ReadFile(requests)
		return strings.Count(string(b), "events.subscribe") >= 2 // start's, then the wait's
	})
	standinCall(t, socket, "standin.handoff")
	if out := mustRun(t, dir, "reconcile"); !strings.Contains(out, "nothing to repair") {
		t.Fatalf("reconcile touched a lease that a live handoff kept running:\n%s", out)
	}
	if err := <-waited; err != nil {
		t.Fatalf("wait across a live handoff: %v", err)
	}
	l := record(t, dir, id)
	if l.State != gitlease.Review {
		t.Fatalf("after a live handoff the lease is %s %q, want review", l.State, l.Reason)
	}
	mustRun(t, dir, "cleanup", id)
	if b, _ := os.ReadFile(requests); strings.Count(string(b), "pane.close") != 1 {
		t.Fatalf("cleanup did not close the handed-off pane:\n%s", b)
	}
	if _, err := (&herdr.Client{Socket: socket}).Get(context.Background(), l.Supervisor.PaneID); !errors.Is(err, herdr.ErrPaneNotFound) {
		t.Fatalf("the lease's pane is still there after cleanup: %v", err)
	}
	noFocusCalls(t, requests)
}

func TestAdoptRecordsAHandStartedAgent(t *testing.T) {
	dir := faultRepo(t)
	socket, requests := herdrServer(t)
	client := &herdr.Client{Socket: socket}
	ws, err := client.CreateWorkspace(context.Background(), herdr.WorkspaceSpec{Label: "my agent", Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, dir, "adopt", "--pane", ws.Root.PaneID, "--mission", "T-7")
	id := regexp.MustCompile(`(?m)^[0-9a-f]{12}$`).FindString(out)
	l := record(t, dir, id)
	if l.Mode != gitlease.TrustedLocal || l.Sandboxed || l.State != gitlease.Running || l.Branch != "main" || l.Supervisor.PaneID != ws.Root.PaneID {
		t.Fatalf("adopted lease: %+v", l)
	}
	if show := mustRun(t, dir, "show", id); !strings.Contains(show, "NOT sandboxed") {
		t.Fatalf("an adopted lease must never read as sandboxed:\n%s", show)
	}
	if ls := mustRun(t, dir, "ls", "--mission", "T-7"); !strings.Contains(ls, id) {
		t.Fatalf("ls --mission does not show it:\n%s", ls)
	}
	if out := mustRun(t, dir, "reconcile"); !strings.Contains(out, "nothing to repair") {
		t.Fatalf("reconcile touched a live adopted lease:\n%s", out)
	}
	if err := client.Close(context.Background(), herdr.Pane{PaneID: ws.Root.PaneID, TerminalID: ws.Root.TerminalID}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "reconcile")
	if l := record(t, dir, id); l.State != gitlease.Failed {
		t.Fatalf("the adopted agent's pane is gone, but the lease is %s", l.State)
	}
	noFocusCalls(t, requests)
}

// TestKilledRunnerLeavesAReviewablePartialResult: SIGKILL of a lease's
// runner (git-lease __run) while the agent works. Reconcile collects what
// the agent left into a verified partial result of the failed lease: show
// names it, diff prints it, logs prints the agent's output so far; the
// sandbox's upper directory is still there until cleanup.
func TestKilledRunnerLeavesAReviewablePartialResult(t *testing.T) {
	dir := faultRepo(t)
	run := filepath.Join(dir, ".git", "lease", "runs")
	id := startDetached(t, dir, "--", "sh", "-c", `echo partial work > part.txt; echo edited > a.txt; echo "wrote part.txt"; sleep 120`)
	waitFor(t, "the agent to write its work", func() bool {
		b, _ := os.ReadFile(filepath.Join(run, id, "agent.log"))
		return strings.Contains(string(b), "wrote part.txt")
	})
	var runner struct{ PID int }
	b, err := os.ReadFile(filepath.Join(run, id, "runner.json"))
	if err != nil || json.Unmarshal(b, &runner) != nil || runner.PID == 0 {
		t.Fatalf("runner.json: %v %s", err, b)
	}
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", runner.PID)); !strings.Contains(string(cmdline), gitlease.RunnerArg) {
		t.Fatalf("pid %d is not the runner: %q", runner.PID, cmdline)
	}
	holders := sandboxHolders(t, filepath.Join(run, id))
	if len(holders) != 2 {
		t.Fatalf("sandbox.json names %d processes, want bwrap and the sandbox's first: %+v", len(holders), holders)
	}
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", holders[1].PID)); !strings.Contains(string(cmdline), "lease-gate") {
		t.Fatalf("pid %d is not the sandbox's first process: %q", holders[1].PID, cmdline)
	}
	if err := syscall.Kill(runner.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the runner to be gone", func() bool {
		out, _ := runLease(t, dir, nil, "wait", "--timeout", "1s", id)
		return strings.Contains(out, "nothing runs it")
	})
	repair := mustRun(t, dir, "reconcile")
	for _, h := range holders {
		if process.Alive(h.PID, h.StartTime) {
			t.Fatalf("sandbox process %d outlived its runner and reconcile", h.PID)
		}
	}
	l := record(t, dir, id)
	if l.State != gitlease.Failed || l.Result == nil || l.Result.Status != "failed" || l.Agent == nil || !l.Agent.RunnerGone {
		t.Fatalf("after reconcile: %s %q %+v\n%s", l.State, l.Reason, l.Result, repair)
	}
	if !strings.Contains(repair, "collected what it left") {
		t.Fatalf("reconcile does not say it collected:\n%s", repair)
	}
	paths := []string{}
	for _, f := range l.Result.Manifest {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "a.txt part.txt" {
		t.Fatalf("partial result: %v", paths)
	}
	if out := mustRun(t, dir, "show", id); !strings.Contains(out, "part.txt") {
		t.Fatalf("show:\n%s", out)
	}
	if out := mustRun(t, dir, "diff", id); !strings.Contains(out, "+partial work") || !strings.Contains(out, "+edited") {
		t.Fatalf("diff:\n%s", out)
	}
	if out := mustRun(t, dir, "logs", id); !strings.Contains(out, "wrote part.txt") {
		t.Fatalf("logs:\n%s", out)
	}
	mustRun(t, dir, "verify", id)
	if _, err := os.Stat(filepath.Join(upperDir(t, filepath.Join(run, id)), "part.txt")); err != nil {
		t.Fatalf("the agent's work is not on disk until cleanup: %v", err)
	}
	if out := mustRun(t, dir, "reconcile"); !strings.Contains(out, "nothing to repair") {
		t.Fatalf("a second reconcile:\n%s", out)
	}
	// The reviewer takes the partial result: it is collected again,
	// verified, signed and checked out into the review worktree only.
	head := refstest.Git(t, dir, "rev-parse", "HEAD")
	mustRun(t, dir, "collect", "--partial", id)
	l = record(t, dir, id)
	if l.State != gitlease.Review || l.Result.Status != "ok" || !l.Agent.RunnerGone || !l.PartialCollect {
		t.Fatalf("after collect --partial: %s %q %+v %+v", l.State, l.Reason, l.Result, l.Agent)
	}
	if tip := refstest.Git(t, dir, "rev-parse", "lease/"+id); tip != l.Result.Commit {
		t.Fatalf("branch lease/%s is at %s, not the result %s", id, tip, l.Result.Commit)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".git", "lease", "worktrees", id, "part.txt")); err != nil || string(b) != "partial work\n" {
		t.Fatalf("the review worktree does not show the partial result: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "part.txt")); !os.IsNotExist(err) || refstest.Git(t, dir, "rev-parse", "HEAD") != head {
		t.Fatalf("collect --partial wrote outside the review worktree: %v", err)
	}
	mustRun(t, dir, "verify", id)
	mustRun(t, dir, "apply", id)
	if b, err := os.ReadFile(filepath.Join(dir, "part.txt")); err != nil || string(b) != "partial work\n" {
		t.Fatalf("apply of the partial result: %q %v", b, err)
	}
}

// TestCollectPartialKeepsAPersonsFiles: collect --partial of a failed
// lease refuses, and changes nothing, when a person put files in the
// review worktree that checking the result out would overwrite.
func TestCollectPartialKeepsAPersonsFiles(t *testing.T) {
	dir := faultRepo(t)
	// The agent fails at once: start may already see it failed and say so.
	out, _ := runLease(t, dir, nil, "start", "-q", "--detach", "--", "sh", "-c", "echo agent > part.txt; exit 3")
	id := leaseID(out)
	if id == "" {
		t.Fatalf("start printed no lease ID:\n%s", out)
	}
	waitFor(t, "the agent to fail", func() bool { return record(t, dir, id).State == gitlease.Failed })
	mine := filepath.Join(dir, ".git", "lease", "worktrees", id, "part.txt")
	writeFile(t, mine, "mine\n", 0o644)
	before := refstest.Git(t, dir, "rev-parse", "refs/leases/"+id)
	out, err := runLease(t, dir, nil, "collect", "--partial", id)
	if err == nil || !strings.Contains(out, "holds files the lease did not put there") {
		t.Fatalf("collect --partial over a person's file: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(mine); string(b) != "mine\n" {
		t.Fatalf("the person's file was overwritten: %q", b)
	}
	if after := refstest.Git(t, dir, "rev-parse", "refs/leases/"+id); after != before {
		t.Fatalf("a refused collect --partial wrote to the log")
	}
	os.Remove(mine)
	mustRun(t, dir, "collect", "--partial", id)
	if b, _ := os.ReadFile(mine); string(b) != "agent\n" {
		t.Fatalf("the review worktree after collect --partial: %q", b)
	}
}

// TestCollectPartialWhenTheRunnerDiedBeforeTheReviewWorktree: a runner
// killed after it marked the review worktree as staged but before "git
// worktree add" finished leaves no worktree on disk, registered with git
// or not; collect --partial adds it and checks the result out.
func TestCollectPartialWhenTheRunnerDiedBeforeTheReviewWorktree(t *testing.T) {
	for _, registered := range []bool{true, false} {
		t.Run(fmt.Sprintf("registered=%v", registered), func(t *testing.T) {
			dir := faultRepo(t)
			out, _ := runLease(t, dir, nil, "start", "-q", "--detach", "--", "sh", "-c", "echo agent > part.txt; exit 3")
			id := leaseID(out)
			if id == "" {
				t.Fatalf("start printed no lease ID:\n%s", out)
			}
			waitFor(t, "the agent to fail", func() bool { return record(t, dir, id).State == gitlease.Failed })
			if _, err := os.Stat(filepath.Join(dir, ".git", "lease", "runs", id, "review-at-base")); err != nil {
				t.Fatalf("the failed lease's review worktree is not marked as staged: %v", err)
			}
			wt := filepath.Join(dir, ".git", "lease", "worktrees", id)
			if err := os.RemoveAll(wt); err != nil {
				t.Fatal(err)
			}
			if !registered {
				refstest.Git(t, dir, "worktree", "prune")
			}
			mustRun(t, dir, "collect", "--partial", id)
			if b, err := os.ReadFile(filepath.Join(wt, "part.txt")); err != nil || string(b) != "agent\n" {
				t.Fatalf("the review worktree after collect --partial: %q %v", b, err)
			}
			if l := record(t, dir, id); l.State != gitlease.Review {
				t.Fatalf("after collect --partial: %s %q", l.State, l.Reason)
			}
		})
	}
}

// TestCleanupRecordsWhatItDiscards: a canceled lease's partial work is not
// in a result; cleanup records its listing, each file with its sha256,
// in the log before it removes the sandbox, and its receipt names the
// listing's digest.
func TestCleanupRecordsWhatItDiscards(t *testing.T) {
	dir := faultRepo(t)
	id := startDetached(t, dir, "--", "sh", "-c", `echo partial > part.txt; echo started; while :; do sleep 0.1; done`)
	waitFor(t, "the agent to write", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, ".git", "lease", "runs", id, "agent.log"))
		return strings.Contains(string(b), "started")
	})
	mustRun(t, dir, "cancel", "--grace", "1s", id)
	out := mustRun(t, dir, "cleanup", id)
	if !regexp.MustCompile(`agent-work +recorded +1 entries not in a result, discarded with the sandbox: sha256:[0-9a-f]{64}`).MatchString(out) {
		t.Fatalf("the cleanup receipt does not name what it discarded:\n%s", out)
	}
	listing := refstest.Git(t, dir, "show", "refs/leases/"+id+":cleanup/discarded.txt")
	// sha256 of "partial\n"
	if !strings.Contains(listing, "sha256:95aebb28195b8d737effe0df18d71d39c8d8ba6569286fd3930fbc9f9767181e \"part.txt\"") {
		t.Fatalf("the listing of what was discarded:\n%s", listing)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "lease", "runs", id)); !os.IsNotExist(err) {
		t.Fatalf("the sandbox was not removed: %v", err)
	}
	before := refstest.Git(t, dir, "rev-parse", "refs/leases/"+id)
	mustRun(t, dir, "cleanup", id)
	if after := refstest.Git(t, dir, "rev-parse", "refs/leases/"+id); after != before {
		t.Fatalf("a second cleanup wrote to the log")
	}
}

// sandboxHolders reads the processes a lease recorded as holding its
// sandbox (sandbox.json in its run directory).
func sandboxHolders(t *testing.T, run string) []process.Record {
	t.Helper()
	var procs []process.Record
	b, err := os.ReadFile(filepath.Join(run, "sandbox.json"))
	if err != nil || json.Unmarshal(b, &procs) != nil {
		t.Fatalf("sandbox.json: %v %s", err, b)
	}
	return procs
}

// lingering starts a process of the test's that stands in for one a lease
// left running, and returns it with its start time.
func lingering(t *testing.T) process.Record {
	t.Helper()
	linger := exec.Command("sleep", "300")
	if err := linger.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { linger.Wait(); close(exited) }()
	t.Cleanup(func() { linger.Process.Kill(); <-exited })
	start, err := process.StartTime(linger.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return process.Record{PID: linger.Process.Pid, StartTime: start}
}

// TestCleanupConfirmsTheSandboxIsGone: a process that holds a lease's
// sandbox (sandbox.json: PID and start time) is still alive at cleanup
// although the runner is gone; cleanup stops it, names it in the receipt,
// and confirms only once it has exited. (A process of the test's stands in
// for a lingering sandbox.)
func TestCleanupConfirmsTheSandboxIsGone(t *testing.T) {
	dir := faultRepo(t)
	id := startLease(t, dir, "echo done > d.txt")
	run := filepath.Join(dir, ".git", "lease", "runs", id)
	if holders := sandboxHolders(t, run); len(holders) != 2 || process.Alive(holders[0].PID, holders[0].StartTime) {
		t.Fatalf("the sandbox of a finished lease: %+v", holders)
	}
	p := lingering(t)
	b, _ := json.Marshal([]process.Record{p})
	writeFile(t, filepath.Join(run, "sandbox.json"), string(b), 0o600)
	out := mustRun(t, dir, "cleanup", id)
	if !regexp.MustCompile(fmt.Sprintf(`sandbox-processes +stopped +pid %d`, p.PID)).MatchString(out) || !strings.Contains(out, "cleanup confirmed") {
		t.Fatalf("cleanup with a sandbox process alive:\n%s", out)
	}
	if process.Alive(p.PID, p.StartTime) { // a zombie until the test reaps it
		t.Fatalf("the sandbox process still runs after cleanup confirmed")
	}
}

// TestCleanupConfirmsTheRunnerIsGone: the runner a lease recorded
// (runner.json: PID and start time) is still alive when its Herdr pane is
// gone; cleanup stops it and names it in the receipt instead of confirming
// with it alive. (A process of the test's stands in for a lingering
// runner.)
func TestCleanupConfirmsTheRunnerIsGone(t *testing.T) {
	dir := faultRepo(t)
	herdrServer(t)
	id := startDetached(t, dir, "--supervisor", "herdr", "--", "sh", "-c", "echo done > d.txt")
	mustRun(t, dir, "wait", id)
	linger := exec.Command("sleep", "300")
	if err := linger.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { linger.Wait(); close(exited) }()
	t.Cleanup(func() { linger.Process.Kill(); <-exited })
	start, err := process.StartTime(linger.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(process.Record{PID: linger.Process.Pid, StartTime: start})
	writeFile(t, filepath.Join(dir, ".git", "lease", "runs", id, "runner.json"), string(b), 0o600)
	out := mustRun(t, dir, "cleanup", id)
	if !regexp.MustCompile(fmt.Sprintf(`runner +stopped +pid %d`, linger.Process.Pid)).MatchString(out) || !strings.Contains(out, "cleanup confirmed") {
		t.Fatalf("cleanup with the runner alive:\n%s", out)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("the runner still runs after cleanup confirmed")
	}
}

// upperDir is where the test reads the upper directory of the bwrap
// sandbox of the lease whose runtime directory is run: the provider's
// Delta (on root's leases, in a mount of their disk image).
func upperDir(t *testing.T, run string) string {
	t.Helper()
	d, err := bwrap.Provider{}.Delta(sandbox.Spec{Dir: filepath.Join(run, "sandbox")})
	if err != nil {
		t.Fatal(err)
	}
	return d.Root
}
