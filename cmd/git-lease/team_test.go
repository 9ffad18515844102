package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs/refstest"
)

// team is a shared bare repository with git-lease's pre-receive hook, which
// trusts the honest test key alone, and the author's clone, which pushed one
// lease to it. The server had a pre-receive hook of its own before; it is
// chained and logs every push to serverLog.
type team struct {
	server, signers, serverLog string
	author, id                 string
	key                        string // the honest private key, for git commit-tree -S
}

func newTeam(t *testing.T) *team {
	t.Helper()
	tm := &team{author: refstest.Repo(t, map[string]string{"bug.txt": "broken\n"})}
	config := filepath.Join(t.TempDir(), "config")
	keys := filepath.Join(config, "git-lease", "keys")
	if err := installTestKey(filepath.Join("..", "..", "testdata", "keys"), keys); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("GIT_LEASE_TEST_ID_SEED", "")
	tm.key = filepath.Join(keys, "git-lease_ed25519")
	pub, err := os.ReadFile(tm.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tm.signers, tm.serverLog, tm.server = filepath.Join(dir, "allowed_signers"), filepath.Join(dir, "server-hook.log"), filepath.Join(dir, "server.git")
	writeFile(t, tm.signers, "ada@example.com "+string(pub), 0o644)
	refstest.Git(t, "", "init", "-q", "--bare", "-b", "main", tm.server)
	refstest.Git(t, tm.server, "config", "lease.allowedSignersFile", tm.signers)
	writeFile(t, filepath.Join(tm.server, "hooks", "pre-receive"), "#!/bin/sh\ncat >>'"+tm.serverLog+"'\n", 0o755)
	if out := mustRun(t, tm.server, "hooks", "install", "--server"); !strings.Contains(out, "pre-receive.chained and runs first") {
		t.Fatalf("installing over the server's own hook:\n%s", out)
	}
	refstest.Git(t, tm.author, "remote", "add", "origin", tm.server)
	refstest.Git(t, tm.author, "push", "-q", "-u", "origin", "main")
	tm.id = startLease(t, tm.author, "echo fixed > bug.txt")
	mustRun(t, tm.author, "push")
	return tm
}

// clone is a teammate's clone of the server: git clone, then git lease fetch.
func (tm *team) clone(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	refstest.Git(t, "", "clone", "-q", tm.server, dir)
	mustRun(t, dir, "fetch")
	return dir
}

// serverTip is where the server's log of the team's lease is.
func (tm *team) serverTip(t *testing.T) string {
	t.Helper()
	return refstest.Git(t, tm.server, "rev-parse", "refs/leases/"+tm.id)
}

// serverRefs is every ref of the server with its value.
func (tm *team) serverRefs(t *testing.T) string {
	t.Helper()
	return refstest.Git(t, tm.server, "for-each-ref")
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// gitIn runs git in dir with the pinned environment plus env, and stdin,
// and returns its combined output and error.
func gitIn(dir string, env []string, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), refstest.Env...), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestTeamPushFetchVerify(t *testing.T) {
	tm := newTeam(t)
	for _, ref := range []string{"refs/leases/" + tm.id, "refs/heads/lease/" + tm.id, "refs/notes/leases"} {
		if !strings.Contains(tm.serverRefs(t), ref) {
			t.Fatalf("the server lacks %s:\n%s", ref, tm.serverRefs(t))
		}
	}
	if b, _ := os.ReadFile(tm.serverLog); !strings.Contains(string(b), " refs/leases/"+tm.id) {
		t.Fatalf("the server's own, chained hook did not see the push: %q", b)
	}
	mate := tm.clone(t)
	if out := mustRun(t, mate, "ls", "--remote", "origin"); !strings.Contains(out, tm.id+"  review  sandboxed") {
		t.Fatalf("ls --remote origin:\n%s", out)
	}
	if out := mustRun(t, mate, "verify", tm.id, "--allowed-signers", tm.signers); !strings.Contains(out, "lease "+tm.id+": ok") {
		t.Fatalf("verify in the teammate's clone:\n%s", out)
	}
	if out := mustRun(t, tm.author, "fetch"); !strings.Contains(out, "0 created, 0 fast-forwarded, 3 up to date, 0 diverged") {
		t.Fatalf("fetching back what was pushed:\n%s", out)
	}

	// trusted_local leases stay local unless the owner says otherwise.
	local := leaseID(mustRun(t, tm.author, "start", "-q", "--mode", "trusted_local", "--", "sh", "-c", "echo mine > bug.txt"))
	if out := mustRun(t, tm.author, "push"); !strings.Contains(out, "not pushing lease "+local+": it is trusted_local") {
		t.Fatalf("push of a trusted_local lease:\n%s", out)
	}
	if strings.Contains(tm.serverRefs(t), local) {
		t.Fatalf("a trusted_local lease reached the server")
	}
	refstest.Git(t, tm.author, "config", "lease.shareTrustedLocal", "true")
	if out := mustRun(t, tm.author, "push", "origin", local); !strings.Contains(out, "lease "+local+": pushed to origin") {
		t.Fatalf("push with lease.shareTrustedLocal:\n%s", out)
	}
	if !strings.Contains(tm.serverRefs(t), "refs/leases/"+local) {
		t.Fatalf("the shared trusted_local lease is not on the server")
	}
}

// rogueSigners is an allowed-signers file that names only a new key of
// eve's, which signed nothing.
func rogueSigners(t *testing.T) string {
	t.Helper()
	rogue := filepath.Join(t.TempDir(), "rogue")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rogue", "-f", rogue).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, _ := os.ReadFile(rogue + ".pub")
	others := filepath.Join(t.TempDir(), "others")
	writeFile(t, others, "eve@example.com "+string(pub), 0o644)
	return others
}

func TestServerTrustsOnlyItsAllowedSigners(t *testing.T) {
	tm := newTeam(t)
	before := tm.serverRefs(t)
	id := startLease(t, tm.author, "echo again > bug.txt")
	others := rogueSigners(t)
	for _, c := range []struct{ name, file, reason string }{
		// The server runs as the same user with the same key, and still
		// refuses: it trusts its allowed signers, never its own key.
		{"a file without the signer's key", others, "is not in the allowed signers"},
		{"no allowed signers at all", "", "this server has no allowed signers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.file == "" {
				refstest.Git(t, tm.server, "config", "--unset", "lease.allowedSignersFile")
			} else {
				refstest.Git(t, tm.server, "config", "lease.allowedSignersFile", c.file)
			}
			out, err := runLease(t, tm.author, nil, "push", "origin", id)
			if err == nil || !strings.Contains(out, "remote: git-lease: refs/leases/"+id+": ") || !strings.Contains(out, c.reason) {
				t.Fatalf("push: %v\n%s", err, out)
			}
			if after := tm.serverRefs(t); after != before {
				t.Fatalf("the server's refs changed:\n%s\nwere:\n%s", after, before)
			}
		})
	}
	refstest.Git(t, tm.server, "config", "lease.allowedSignersFile", tm.signers)
	mustRun(t, tm.author, "push", "origin", id)
}

func TestLocalGuardRefusesOtherWritesToLeaseLogs(t *testing.T) {
	tm := newTeam(t)
	mate := tm.clone(t)
	hook := filepath.Join(mate, ".git", "hooks", "reference-transaction")
	chainedLog := filepath.Join(t.TempDir(), "chained.log")
	original := "#!/bin/sh\n{ echo \"$1\"; cat; } >>'" + chainedLog + "'\n"
	writeFile(t, hook, original, 0o755)
	if out := mustRun(t, mate, "hooks", "install"); !strings.Contains(out, "reference-transaction.chained and runs first") {
		t.Fatalf("install over an existing hook:\n%s", out)
	}
	logRef := "refs/leases/" + tm.id
	tip := refstest.Git(t, mate, "rev-parse", logRef)
	for _, args := range [][]string{{"update-ref", logRef, "HEAD"}, {"update-ref", "-d", logRef}, {"update-ref", "refs/leases/0123456789ab", "HEAD"}} {
		out, err := gitIn(mate, nil, "", args...)
		if err == nil || !strings.Contains(out, "git-lease: refusing to change refs/leases/") || !strings.Contains(out, "not a security boundary") {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if now := refstest.Git(t, mate, "rev-parse", logRef); now != tip {
		t.Fatalf("the guarded log moved")
	}
	refstest.Git(t, mate, "update-ref", "refs/heads/other", "HEAD")
	refstest.Git(t, mate, "gc", "-q") // packs refs, and so runs the hook on the lease logs, which it does not move
	if now := refstest.Git(t, mate, "rev-parse", logRef); now != tip {
		t.Fatalf("gc moved the guarded log")
	}
	if out, err := gitIn(mate, nil, "", "update-ref", "-d", logRef); err == nil || !strings.Contains(out, "git-lease: refusing to change "+logRef) {
		t.Fatalf("deleting a packed log: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(chainedLog); !strings.Contains(string(b), "prepared\n") || !strings.Contains(string(b), " refs/heads/other") {
		t.Fatalf("the chained hook did not run: %q", b)
	}
	// git-lease's own writes pass: it runs git with hooks off.
	mustRun(t, mate, "reject", tm.id, "--reason=not now")
	startLease(t, mate, "echo mate > bug.txt")
	mustRun(t, mate, "fetch")
	mustRun(t, mate, "hooks", "install", "--uninstall")
	if b, _ := os.ReadFile(hook); string(b) != original {
		t.Fatalf("uninstall did not restore the chained hook: %q", b)
	}
}

// A lease pushed while it runs is the author's: in a teammate's clone,
// reconcile (and so start) leaves it alone, and cancel, wait, attach,
// collect --partial and cleanup refuse it, so the teammate's log never
// diverges from the author's.
func TestAFetchedRunningLeaseIsLeftToItsClone(t *testing.T) {
	tm := newTeam(t)
	running := startDetached(t, tm.author, "--", "sh", "-c", "sleep 60")
	mustRun(t, tm.author, "push", "--all") // a running lease is sent only when asked
	t.Cleanup(func() { runLease(t, tm.author, nil, "cancel", running) })
	mate := tm.clone(t)
	tips := refstest.Git(t, mate, "rev-parse", "refs/leases/"+running, "refs/leases/"+tm.id)
	if out := mustRun(t, mate, "reconcile"); strings.Contains(out, running) {
		t.Fatalf("reconcile in the teammate's clone touched the author's running lease:\n%s", out)
	}
	startLease(t, mate, "echo mine > bug.txt")
	for _, args := range [][]string{{"cancel", running}, {"wait", running}, {"attach", running}, {"cleanup", tm.id}} {
		out, err := runLease(t, mate, nil, args...)
		if err == nil || !strings.Contains(out, "started in another clone") {
			t.Errorf("git lease %s in the teammate's clone: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out := mustRun(t, mate, "cleanup", "--all"); strings.Contains(out, running) || strings.Contains(out, tm.id) {
		t.Errorf("cleanup --all cleaned up the author's leases:\n%s", out)
	}
	if now := refstest.Git(t, mate, "rev-parse", "refs/leases/"+running, "refs/leases/"+tm.id); now != tips {
		t.Fatalf("the teammate's clone wrote to the author's lease logs")
	}
	if l := record(t, tm.author, running); l.State != gitlease.Running {
		t.Fatalf("the author's lease is %s", l.State)
	}
	// In its own clone, waiting for it is allowed, and times out (exit 4).
	var exit *exec.ExitError
	if out, err := runLease(t, tm.author, nil, "wait", "--timeout", "1s", running); !errors.As(err, &exit) || exit.ExitCode() != 4 {
		t.Errorf("wait --timeout 1s on the author's running lease: %v, want exit 4\n%s", err, out)
	}
	// Canceled by its author, the lease still cannot be collected here.
	mustRun(t, tm.author, "cancel", running)
	mustRun(t, tm.author, "push", "--all")
	mustRun(t, mate, "fetch")
	if out, err := runLease(t, mate, nil, "collect", "--partial", running); err == nil || !strings.Contains(out, "started in another clone") {
		t.Errorf("collect --partial of the author's canceled lease in the teammate's clone: %v\n%s", err, out)
	}
	// Rejecting the author's lease here, an explicit act, takes its work
	// lock (which makes its run directory): it is still the author's.
	mustRun(t, mate, "reject", tm.id)
	if out, err := runLease(t, mate, nil, "cleanup", tm.id); err == nil || !strings.Contains(out, "started in another clone") {
		t.Errorf("cleanup of the author's rejected lease in the teammate's clone: %v\n%s", err, out)
	}
}

// A result that never reached review has a commit that no pushed ref
// reaches: a quarantined one whose tree was built (a case collision is
// found on the built tree) and a failed agent's. The server takes such
// leases, and a teammate's verify and review pass on the patch and
// manifest the log carries.
func TestResultsThatNeverReachedReviewTravelAndVerify(t *testing.T) {
	tm := newTeam(t)
	writeFile(t, filepath.Join(tm.author, "README"), "read me\n", 0o644)
	refstest.Git(t, tm.author, "add", "README")
	refstest.Git(t, tm.author, "commit", "-q", "-m", "readme")
	var ids []string
	for _, tc := range []struct {
		script string
		state  gitlease.State
	}{{"echo x > readme", gitlease.Quarantined}, {"echo half > half.txt; exit 3", gitlease.Failed}} {
		out, err := runLease(t, tm.author, nil, "start", "-q", "--", "sh", "-c", tc.script)
		id := leaseID(out)
		if l := record(t, tm.author, id); err == nil || l.State != tc.state || l.Result == nil || l.Result.Tree == "" {
			t.Fatalf("start %q: %v\n%s\nwant a %s lease with a built result", tc.script, err, out, tc.state)
		}
		ids = append(ids, id)
	}
	// A failed lease is sent only when asked (--all); a quarantined one always.
	if out := mustRun(t, tm.author, "push", "--all"); !strings.Contains(out, "lease "+ids[0]+": pushed") || !strings.Contains(out, "lease "+ids[1]+": pushed") {
		t.Fatalf("push:\n%s", out)
	}
	mate := tm.clone(t)
	for _, id := range ids {
		if out := mustRun(t, mate, "verify", id, "--allowed-signers", tm.signers); !strings.Contains(out, "lease "+id+": ok") {
			t.Fatalf("verify in the teammate's clone:\n%s", out)
		}
		if out := mustRun(t, mate, "review", id); !strings.Contains(out, "checked: no result commit here") {
			t.Fatalf("review in the teammate's clone:\n%s", out)
		}
	}
}

// TestServerTakesAPartialCollect: a failed lease pushed for review, then
// collected on request (failed -> collecting -> … -> review), pushes
// again: the server's hook verifies the new entries as legal transitions.
func TestServerTakesAPartialCollect(t *testing.T) {
	tm := newTeam(t)
	out, err := runLease(t, tm.author, nil, "start", "-q", "--", "sh", "-c", "echo half > bug.txt; exit 3")
	id := leaseID(out)
	if err == nil || id == "" {
		t.Fatalf("a failing agent's start: %v\n%s", err, out)
	}
	mustRun(t, tm.author, "push")
	mustRun(t, tm.author, "collect", "--partial", id)
	if out, err := runLease(t, tm.author, nil, "push"); err != nil {
		t.Fatalf("push after collect --partial: %v\n%s", err, out)
	}
	if server := refstest.Git(t, tm.server, "log", "-1", "--format=%s", "refs/leases/"+id); server != "lease "+id+": verifying -> review" {
		t.Fatalf("the server's log of the lease ends %q", server)
	}
}

// TestFetchVerifiesWithConfiguredSigners: a lease fetched from a server
// without the verifying hook comes in unverified only when no allowed
// signers are configured; with them, fetch verifies it before it writes
// refs/leases/<id>, keeps one signed by a key they do not hold out (with
// its review branch), says why, and takes it once they hold the key.
func TestFetchVerifiesWithConfiguredSigners(t *testing.T) {
	tm := newTeam(t)
	plain := filepath.Join(t.TempDir(), "plain.git")
	refstest.Git(t, "", "init", "-q", "--bare", "-b", "main", plain)
	refstest.Git(t, tm.author, "remote", "add", "plain", plain)
	refstest.Git(t, tm.author, "push", "-q", "plain", "main")
	mustRun(t, tm.author, "push", "plain", tm.id)
	mate := filepath.Join(t.TempDir(), "mate")
	refstest.Git(t, "", "clone", "-q", plain, mate)
	// The teammate has a key of their own, which is not the author's.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	mustRun(t, mate, "keys", "init")
	others := rogueSigners(t)
	refstest.Git(t, mate, "config", "lease.allowedSignersFile", others)
	out := mustRun(t, mate, "fetch")
	if !strings.Contains(out, "refs/remotes/origin/leases/"+tm.id) || !strings.Contains(out, "kept out: it does not verify against your allowed signers") {
		t.Fatalf("fetch of a lease its signers do not hold:\n%s", out)
	}
	if refs := refstest.Git(t, mate, "for-each-ref", "refs/leases/", "refs/heads/lease/"); refs != "" {
		t.Fatalf("fetch let the unverified lease in:\n%s", refs)
	}
	refstest.Git(t, mate, "config", "lease.allowedSignersFile", tm.signers)
	if out := mustRun(t, mate, "fetch"); !strings.Contains(out, "created  refs/leases/"+tm.id) {
		t.Fatalf("fetch with the author's key allowed:\n%s", out)
	}
	mustRun(t, mate, "verify", tm.id)
}
