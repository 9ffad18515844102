package gitlease

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

const zero = "0000000000000000000000000000000000000000"

func TestGuardLeaseRefsRefusesChangesToLeaseLogsOnly(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	head := refstest.Git(t, dir, "rev-parse", "HEAD")
	refstest.Git(t, dir, "update-ref", "refs/leases/aaaaaaaaaaaa", head)
	refstest.Git(t, dir, "pack-refs", "--all")
	refstest.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "next")
	next := refstest.Git(t, dir, "rev-parse", "HEAD")
	refstest.Git(t, dir, "update-ref", "refs/leases/bbbbbbbbbbbb", next) // loose only
	repo, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	open := func() (*refs.Repo, error) { return repo, nil }
	for _, c := range []struct {
		name, state, input string
		refused            bool
	}{
		{"a branch", "prepared", zero + " " + next + " refs/heads/main\n", false},
		{"a review branch", "prepared", zero + " " + next + " refs/heads/lease/aaaaaaaaaaaa\n", false},
		{"a symbolic ref", "prepared", "ref:refs/heads/a ref:refs/heads/b HEAD\n", false},
		{"a new lease log", "prepared", zero + " " + next + " refs/leases/cccccccccccc\n", true},
		{"a lease log moved", "prepared", head + " " + next + " refs/leases/aaaaaaaaaaaa\n", true},
		{"a lease log among branches", "prepared", zero + " " + next + " refs/heads/x\n" + zero + " " + head + " refs/leases/junk\n", true},
		{"a lease log deleted", "prepared", zero + " " + zero + " refs/leases/aaaaaaaaaaaa\n", true},
		{"a loose lease log deleted with its old value", "prepared", next + " " + zero + " refs/leases/bbbbbbbbbbbb\n", true},
		{"pack-refs copying a log into packed-refs", "prepared", zero + " " + next + " refs/leases/bbbbbbbbbbbb\n", false},
		{"pack-refs pruning a loose copy of a packed log", "prepared", head + " " + zero + " refs/leases/aaaaaaaaaaaa\n", false},
		{"a lease log moved, committed", "committed", head + " " + next + " refs/leases/aaaaaaaaaaaa\n", false},
		{"a lease log moved, aborted", "aborted", head + " " + next + " refs/leases/aaaaaaaaaaaa\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := GuardLeaseRefs(c.state, strings.NewReader(c.input), open)
			if refused := errors.Is(err, ErrLeaseRefGuarded); refused != c.refused || (err != nil && !refused) {
				t.Fatalf("GuardLeaseRefs = %v, want refused %v", err, c.refused)
			}
			if c.refused && (!strings.Contains(err.Error(), "refs/leases/") || strings.Contains(err.Error(), "refs/heads/")) {
				t.Fatalf("the refusal should name the lease refs only: %v", err)
			}
		})
	}
	noRepo := func() (*refs.Repo, error) {
		return nil, errors.New("opened the repository for input without lease refs")
	}
	if err := GuardLeaseRefs("prepared", strings.NewReader(zero+" "+next+" refs/heads/main\n"), noRepo); err != nil {
		t.Fatal(err)
	}
	if err := GuardLeaseRefs("prepared", strings.NewReader("garbage\n"), noRepo); err == nil {
		t.Fatal("malformed input was accepted")
	}
}

func TestPreReceiveLeavesOtherRefsAloneAndChecksItsInput(t *testing.T) {
	ctx := context.Background()
	// No lease ref: the repository is not even opened (dir does not exist).
	oid := strings.Repeat("1", 40)
	in := zero + " " + oid + " refs/heads/main\n" + oid + " " + zero + " refs/heads/lease/0123456789ab-edits\n"
	if err := PreReceive(ctx, "/nonexistent", nil, strings.NewReader(in), io.Discard); err != nil {
		t.Fatalf("a push without lease refs: %v", err)
	}
	for _, bad := range []string{"x " + oid + " refs/leases/0123456789ab\n", zero + " " + oid[:39] + " refs/heads/main\n", "only two\n"} {
		if err := PreReceive(ctx, "/nonexistent", nil, strings.NewReader(bad), io.Discard); err == nil {
			t.Errorf("input %q was accepted", bad)
		}
	}
}
