package refs_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

func TestFetchCreatesThenFastForwardsThenChangesNothing(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	log1, branch1 := appendLog(t, tm.a, idX, "one"), setBranch(t, tm.a, idX, "result one")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	rep, err := tm.b.FetchLeases(ctx, "origin")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(rep.Created); got != idX.BranchRef()+" "+idX.LogRef() || len(rep.FastForwarded)+len(rep.Diverged)+len(rep.Skipped) != 0 || rep.NotesMerged {
		t.Fatalf("first fetch: %+v", rep)
	}
	if h, _ := tm.b.LogTip(idX); h != log1 {
		t.Fatalf("B's log = %s, want %s", h, log1)
	}
	if h, _ := tm.b.Ref(idX.BranchRef()); h != branch1 {
		t.Fatalf("B's branch = %s, want %s", h, branch1)
	}
	if ids, err := tm.b.RemoteLeaseIDs("origin"); err != nil || len(ids) != 1 || ids[0] != idX {
		t.Fatalf("RemoteLeaseIDs = %v, %v", ids, err)
	}

	log2, branch2 := appendLog(t, tm.a, idX, "two"), setBranch(t, tm.a, idX, "result two")
	if err := tm.a.PushLeases(ctx, "origin", []refs.ID{idX}); err != nil {
		t.Fatal(err)
	}
	rep, err = tm.b.FetchLeases(ctx, "origin")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(rep.FastForwarded); got != idX.BranchRef()+" "+idX.LogRef() || len(rep.Created) != 0 {
		t.Fatalf("second fetch: %+v", rep)
	}
	if rep.FastForwarded[1].Local != log1 || rep.FastForwarded[1].Remote != log2 {
		t.Fatalf("fast-forward reported as %+v", rep.FastForwarded[1])
	}
	if h, _ := tm.b.Ref(idX.BranchRef()); h != branch2 {
		t.Fatalf("B's branch = %s, want %s", h, branch2)
	}

	rep, err = tm.b.FetchLeases(ctx, "origin")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.UpToDate) != 2 || len(rep.Created)+len(rep.FastForwarded) != 0 {
		t.Fatalf("third fetch: %+v", rep)
	}
}

func TestFetchLeavesLocalWorkAndReportsDivergence(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	appendLog(t, tm.a, idX, "one")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.b.FetchLeases(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	ahead := appendLog(t, tm.b, idX, "B was here")
	rep, err := tm.b.FetchLeases(ctx, "origin")
	if err != nil || names(rep.UpToDate) != idX.LogRef() {
		t.Fatalf("local ahead: %+v, %v", rep, err)
	}

	fromA := appendLog(t, tm.a, idX, "A was here")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	rep, err = tm.b.FetchLeases(ctx, "origin")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Diverged) != 1 || rep.Diverged[0] != (refs.RefState{Name: idX.LogRef(), Local: ahead, Remote: fromA}) {
		t.Fatalf("diverged: %+v", rep)
	}
	if h, _ := tm.b.LogTip(idX); h != ahead {
		t.Fatalf("B's diverged log was overwritten: %s", h)
	}
}

func TestFetchSkipsRefsThatAreNotLeases(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	appendLog(t, tm.a, idX, "one")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	blob := refstest.Git(t, tm.server, "hash-object", "-w", "--stdin")
	refstest.Git(t, tm.server, "update-ref", "refs/leases/not-an-id", "refs/leases/"+string(idX))
	refstest.Git(t, tm.server, "update-ref", "refs/heads/lease/ABCDEF012345", "refs/leases/"+string(idX))
	refstest.Git(t, tm.server, "update-ref", "refs/leases/"+string(idY), blob)
	rep, err := tm.b.FetchLeases(ctx, "origin")
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, s := range rep.Skipped {
		skipped = append(skipped, s.Name+": "+s.Reason)
	}
	want := "refs/remotes/origin/lease/ABCDEF012345: not a lease ID, " +
		"refs/remotes/origin/leases/ba9876543210: not a commit, refs/remotes/origin/leases/not-an-id: not a lease ID"
	if got := strings.Join(skipped, ", "); got != want || names(rep.Created) != idX.LogRef() {
		t.Fatalf("skipped %s\nwant    %s\n(report %+v)", got, want, rep)
	}
	local := refstest.Git(t, tm.dirB, "for-each-ref", "--format=%(refname)", "refs/leases/", "refs/heads/lease/")
	if local != idX.LogRef() {
		t.Fatalf("B's lease refs: %s", local)
	}
	// The listing is of names: the remote does claim a lease idY.
	if ids, _ := tm.b.RemoteLeaseIDs("origin"); len(ids) != 2 || ids[0] != idX || ids[1] != idY {
		t.Fatalf("RemoteLeaseIDs = %v", ids)
	}
}

func TestFetchPrunesRemoteTrackingRefsButNotLeases(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	appendLog(t, tm.a, idX, "one")
	appendLog(t, tm.a, idY, "one")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.b.FetchLeases(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	refstest.Git(t, tm.server, "update-ref", "-d", idY.LogRef())
	if _, err := tm.b.FetchLeases(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := tm.b.RemoteLeaseIDs("origin"); len(ids) != 1 || ids[0] != idX {
		t.Fatalf("RemoteLeaseIDs after the server dropped %s = %v", idY, ids)
	}
	if _, err := tm.b.LogTip(idY); err != nil {
		t.Fatalf("B's own copy of %s is gone: %v", idY, err)
	}
}

func TestFetchDoesNotMoveACheckedOutBranch(t *testing.T) {
	tm, ctx := newTeam(t), context.Background()
	appendLog(t, tm.a, idX, "one")
	first := setBranch(t, tm.a, idX, "result one")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.b.FetchLeases(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	refstest.Git(t, tm.dirB, "worktree", "add", "-q", filepath.Join(t.TempDir(), "review"), idX.Branch())
	setBranch(t, tm.a, idX, "result two")
	if err := tm.a.PushLeases(ctx, "origin", nil); err != nil {
		t.Fatal(err)
	}
	rep, err := tm.b.FetchLeases(ctx, "origin")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "checked out") {
		t.Fatalf("report: %+v", rep)
	}
	if h, _ := tm.b.Ref(idX.BranchRef()); h != first {
		t.Fatalf("checked-out branch moved to %s", h)
	}
}
