package main

import (
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs/refstest"
)

// stopOnInterrupt is an agent that works until it is interrupted.
const stopOnInterrupt = `trap 'echo interrupted; exit 3' INT; while :; do sleep 0.1; done`

// TestRevokeCancelEndsRunningLeasesAndTravels: a mission's revocation
// with --cancel cancels that mission's running lease and no other; the
// repository's cancels the rest. The decision travels with push and fetch,
// so a teammate's clone refuses starts too, and a lift signed by a key its
// allowed signers do not name lifts nothing.
func TestRevokeCancelEndsRunningLeasesAndTravels(t *testing.T) {
	tm := newTeam(t)
	a := startDetached(t, tm.author, "--mission", "A", "--", "sh", "-c", stopOnInterrupt)
	b := startDetached(t, tm.author, "--mission", "B", "--", "sh", "-c", stopOnInterrupt)
	for _, id := range []string{a, b} {
		waitFor(t, "lease "+id+" to run", func() bool { return record(t, tm.author, id).State == gitlease.Running })
	}
	out := mustRun(t, tm.author, "revoke", "--mission", "A", "--cancel", "--grace", "20s", "--reason", "wrong-ticket")
	if !strings.Contains(out, "canceled     "+a) || strings.Contains(out, b) {
		t.Fatalf("revoke --mission A --cancel:\n%s", out)
	}
	if s := record(t, tm.author, a).State; s != gitlease.Canceled {
		t.Fatalf("lease %s of the revoked mission is %s", a, s)
	}
	if s := record(t, tm.author, b).State; s != gitlease.Running {
		t.Fatalf("lease %s of another mission is %s", b, s)
	}
	mustRun(t, tm.author, "revoke", "--cancel", "--grace", "20s", "--reason", "incident-7")
	if s := record(t, tm.author, b).State; s != gitlease.Canceled {
		t.Fatalf("the repository's revocation left lease %s %s", b, s)
	}
	if out := mustRun(t, tm.author, "logs", b); !strings.Contains(out, "interrupted") {
		t.Fatalf("the agent was not interrupted gracefully:\n%s", out)
	}
	if out, err := runLease(t, tm.author, nil, "start", "-q", "--", "true"); err == nil || !strings.Contains(out, "incident-7") {
		t.Fatalf("a start after the revocation: %v\n%s", err, out)
	}

	mustRun(t, tm.author, "push")
	mate := tm.clone(t)
	out, err := runLease(t, mate, nil, "start", "-q", "--", "true")
	if err == nil || !strings.Contains(out, "revoked for this repository by ") || !strings.Contains(out, "incident-7") {
		t.Fatalf("a start in a clone that fetched the revocation: %v\n%s", err, out)
	}

	// A lift signed by a key the clone's allowed signers do not name.
	refstest.Git(t, mate, "config", "lease.allowedSignersFile", tm.signers)
	mustRun(t, mate, "unrevoke")
	mustRun(t, mate, "unrevoke", "--mission", "A")
	if out, err := runLease(t, mate, nil, "start", "-q", "--", "true"); err != nil {
		t.Fatalf("a start after an honest lift: %v\n%s", err, out)
	}
	mustRun(t, mate, "revoke", "--reason", "again")
	rogue := []string{"XDG_CONFIG_HOME=" + t.TempDir()} // git-lease makes itself a new key there
	if out, err := runLease(t, mate, rogue, "unrevoke"); err != nil {
		t.Fatalf("unrevoke with another key: %v\n%s", err, out)
	}
	out, err = runLease(t, mate, nil, "start", "-q", "--", "true")
	if err == nil || !strings.Contains(out, "the revocation log refs/lease-revocations/log does not verify") {
		t.Fatalf("a start after a lift by a key not allowed: %v\n%s", err, out)
	}
}
