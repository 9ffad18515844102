package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs/refstest"
)

// gateRun is one run of git-lease that gateFixture made, in a user
// repository of its own.
type gateRun struct {
	repo, config   string
	stdout, stderr string
	err            error
}

// gateRuns are gateFixture's runs by supervisor; gateRoot holds them, the
// shared state directory and the temporary directory the gates used.
var (
	gateRuns = map[string]*gateRun{}
	gateRoot string
)

// gateFixture gives this test binary the gate records every sandboxed
// start needs, the way a user gets them: the headless one by a plain
// sandboxed start, which finds none and runs the gate first; the herdr one
// by git lease gate against the Herdr stand-in. Both records land in one
// XDG_STATE_HOME, which every test inherits (tests set HOME and
// XDG_CONFIG_HOME of their own, never XDG_STATE_HOME), so each test's
// starts check a real record instead of running the gate again.
// TestGatePassesForBwrapWithBothSupervisors checks these runs.
func gateFixture() error {
	var err error
	if gateRoot, err = os.MkdirTemp("", "git-lease-gate-fixture-"); err != nil {
		return err
	}
	for _, d := range []string{"state", "tmp"} {
		if err := os.Mkdir(filepath.Join(gateRoot, d), 0o700); err != nil {
			return err
		}
	}
	os.Setenv("XDG_STATE_HOME", filepath.Join(gateRoot, "state"))
	socket := filepath.Join(gateRoot, "herdr.sock")
	herdr := exec.Command(filepath.Join(binDir, "herdr-standin"), "-socket", socket, "-log", filepath.Join(gateRoot, "herdr-requests"))
	if err := herdr.Start(); err != nil {
		return err
	}
	defer func() { herdr.Process.Kill(); herdr.Wait() }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the herdr stand-in did not listen on %s", socket)
		}
	}
	runs := map[string][]string{
		"headless": {"start", "-q", "--", "sh", "-c", "echo gated > gated.txt"},
		"herdr":    {"gate", "--supervisor", "herdr", "--json"},
	}
	var wg sync.WaitGroup
	for sup, args := range runs {
		r := &gateRun{repo: filepath.Join(gateRoot, sup), config: filepath.Join(gateRoot, sup+"-config")}
		gateRuns[sup] = r
		if err := gateUserRepo(r.repo); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(filepath.Join(binDir, "git-lease"), args...)
			cmd.Dir = r.repo
			cmd.Env = append(os.Environ(), refstest.Env...)
			cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+r.config, "TMPDIR="+filepath.Join(gateRoot, "tmp"), "HERDR_SOCKET_PATH="+socket)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			r.err = cmd.Run()
			r.stdout, r.stderr = stdout.String(), stderr.String()
		}()
	}
	wg.Wait()
	return nil
}

// gateUserRepo makes the repository a gate fixture run is started from.
func gateUserRepo(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "a.txt"}, {"commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), refstest.Env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", args[0], err, out)
		}
	}
	return nil
}

func gateRecordFile(t *testing.T, state, sup string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "git-lease", "gate", "bwrap-"+sup+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGatePassesForBwrapWithBothSupervisors(t *testing.T) {
	self, err := os.ReadFile(filepath.Join(binDir, "git-lease"))
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(self)
	var uts syscall.Utsname
	syscall.Uname(&uts)
	var kernel []byte
	for _, c := range uts.Release {
		if c != 0 {
			kernel = append(kernel, byte(c))
		}
	}
	for sup, version := range map[string]string{"headless": "dev", "herdr": "0.8.2"} {
		r := gateRuns[sup]
		if r.err != nil {
			t.Fatalf("%s: %v\n%s\n%s", sup, r.err, r.stdout, r.stderr)
		}
		stored := gateRecordFile(t, filepath.Join(gateRoot, "state"), sup)
		var g gitlease.GateRecord
		if err := json.Unmarshal(stored, &g); err != nil {
			t.Fatal(err)
		}
		want := gitlease.GateSetup{Provider: "bwrap", ProviderVersion: g.ProviderVersion, Supervisor: sup, SupervisorVersion: version,
			Kernel: string(kernel), GitLease: "dev", GitLeaseDigest: "sha256:" + hex.EncodeToString(digest[:])}
		if !g.Passed || g.GateSetup != want || g.ProviderVersion == "" || !strings.HasPrefix(g.Session, "gate-") {
			t.Fatalf("%s record:\n%s\nwant setup %+v", sup, stored, want)
		}
		var names []string
		for _, p := range g.Points {
			if !p.Passed || p.Evidence == "" {
				t.Errorf("%s: point %+v", sup, p)
			}
			names = append(names, p.Name)
		}
		if got := strings.Join(names, " "); got != "seed lifecycle events results isolation cleanup" {
			t.Errorf("%s: points %s", sup, got)
		}
		// The user's repository holds the same record as a signed commit,
		// and nothing else of the gate.
		ref := "refs/lease-gates/bwrap/" + sup
		if kept := refstest.Git(t, r.repo, "show", ref+":gate.json"); kept != strings.TrimSpace(string(stored)) {
			t.Errorf("%s: %s holds\n%s\nthe user's store\n%s", sup, ref, kept, stored)
		}
		if c := refstest.Git(t, r.repo, "cat-file", "commit", ref); !strings.Contains(c, "gpgsig -----BEGIN SSH SIGNATURE") {
			t.Errorf("%s: the record's commit is not signed:\n%s", sup, c)
		}
	}
	// The gate's progress went to standard error; its evidence, with
	// --json, to standard output.
	if h := gateRuns["herdr"]; !strings.Contains(h.stderr, "gate: ok   isolation") || !strings.HasPrefix(h.stdout, "{") {
		t.Errorf("herdr gate's output:\n%s\n%s", h.stdout, h.stderr)
	}
	// A start without a record ran the gate first, then its lease.
	h := gateRuns["headless"]
	if !strings.Contains(h.stderr, "running git lease gate --provider bwrap --supervisor headless first") || !strings.Contains(h.stderr, "gate: passed") {
		t.Errorf("the start did not say it ran the gate:\n%s", h.stderr)
	}
	if l := record(t, h.repo, strings.TrimSpace(h.stdout)); l.State != gitlease.Review || l.Mode != gitlease.Sandboxed {
		t.Errorf("the gated start's lease: %s %s", l.State, l.Mode)
	}
	// The user's repository got the record and its own lease, the gate's
	// fixtures are gone, and Herdr was never asked for focus.
	if refs := refstest.Git(t, gateRuns["herdr"].repo, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main\nrefs/lease-gates/bwrap/herdr" {
		t.Errorf("the gate left refs in the user's repository:\n%s", refs)
	}
	if _, err := os.Stat(filepath.Join(gateRuns["herdr"].repo, ".git", "lease")); err == nil {
		t.Errorf("the gate ran leases in the user's repository")
	}
	if left, _ := os.ReadDir(filepath.Join(gateRoot, "tmp")); len(left) > 0 {
		t.Errorf("the gates left %v in their temporary directory", left)
	}
	noFocusCalls(t, filepath.Join(gateRoot, "herdr-requests"))
}

// emptyGateStore gives the test a user with no gate record.
func emptyGateStore(t *testing.T) string {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	return state
}

func TestStartRefusesWithoutAGateWhenPolicyRequiresOne(t *testing.T) {
	dir := faultRepo(t)
	state := emptyGateStore(t)
	writeFile(t, filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git-lease", "policy.toml"), "gate = \"require\"\n", 0o644)
	out, err := runLease(t, dir, nil, "start", "-q", "--", "sh", "-c", "echo x > x.txt")
	if err == nil || !strings.Contains(out, "run git lease gate --provider bwrap --supervisor headless") {
		t.Fatalf("start without a gate record: %v\n%s", err, out)
	}
	if refs := refstest.Git(t, dir, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main" {
		t.Fatalf("a refused start left refs:\n%s", refs)
	}
	// The binary's passing record lets it start; the same record for
	// another kernel does not.
	stored := gateRecordFile(t, filepath.Join(gateRoot, "state"), "headless")
	path := filepath.Join(state, "git-lease", "gate", "bwrap-headless.json")
	writeFile(t, path, string(stored), 0o600)
	id := leaseID(mustRun(t, dir, "start", "-q", "--", "sh", "-c", "echo x > x.txt"))
	if l := record(t, dir, id); l.State != gitlease.Review {
		t.Fatalf("start with a passing record: %s", l.State)
	}
	var g gitlease.GateRecord
	if err := json.Unmarshal(stored, &g); err != nil {
		t.Fatal(err)
	}
	g.Kernel += "-other"
	other, _ := json.Marshal(g)
	writeFile(t, path, string(other), 0o600)
	if out, err := runLease(t, dir, nil, "start", "-q", "--", "true"); err == nil || !strings.Contains(out, "no passing feasibility gate") {
		t.Fatalf("start with another kernel's record: %v\n%s", err, out)
	}
}

// TestAFailingGateRefusesTheStart: with no record, a start runs the gate;
// when a gate point fails (here the gate's own first lease is killed at
// provisioning), the start refuses, records the failed gate, runs no lease
// and falls back to nothing.
func TestAFailingGateRefusesTheStart(t *testing.T) {
	dir := faultRepo(t)
	state := emptyGateStore(t)
	tmp := t.TempDir()
	out, err := runLease(t, dir, []string{"GIT_LEASE_FAULT=start:provisioning", "TMPDIR=" + tmp}, "start", "-q", "--", "sh", "-c", "echo x > x.txt")
	if err == nil || !strings.Contains(out, "gate: FAIL seed") || !strings.Contains(out, "the feasibility gate failed") {
		t.Fatalf("start with a failing gate: %v\n%s", err, out)
	}
	var g gitlease.GateRecord
	if err := json.Unmarshal(gateRecordFile(t, state, "headless"), &g); err != nil || g.Passed {
		t.Fatalf("the failed gate's record: %+v %v", g, err)
	}
	if refs := refstest.Git(t, dir, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main\nrefs/lease-gates/bwrap/headless" {
		t.Fatalf("refs after a failed gate:\n%s", refs)
	}
	if msg := refstest.Git(t, dir, "log", "-1", "--format=%s", "refs/lease-gates/bwrap/headless"); msg != "lease gate bwrap/headless: failed" {
		t.Fatalf("the repository's gate record says %q", msg)
	}
	if ls := leases(t, dir); len(ls) != 0 {
		t.Fatalf("a failed gate still started leases: %+v", ls)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("the failed gate left %v behind", left)
	}
}
