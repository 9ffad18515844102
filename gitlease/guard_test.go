package gitlease

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

const (
	zero = "0000000000000000000000000000000000000000"
	oid  = "1111111111111111111111111111111111111111"
)

func TestGuardLeaseRefsRefusesOnlyLeaseLogsWhenPrepared(t *testing.T) {
	for _, c := range []struct {
		name, state, input string
		refused            bool
	}{
		{"a branch", "prepared", zero + " " + oid + " refs/heads/main\n", false},
		{"a review branch", "prepared", zero + " " + oid + " refs/heads/lease/0123456789ab\n", false},
		{"a lease log", "prepared", oid + " " + zero + " refs/leases/0123456789ab\n", true},
		{"a lease log among others", "prepared", zero + " " + oid + " refs/heads/x\n" + zero + " " + oid + " refs/leases/junk\n", true},
		{"a symbolic ref", "prepared", "ref:refs/heads/a ref:refs/heads/b HEAD\n", false},
		{"a lease log, committed", "committed", oid + " " + zero + " refs/leases/0123456789ab\n", false},
		{"a lease log, aborted", "aborted", oid + " " + zero + " refs/leases/0123456789ab\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := GuardLeaseRefs(c.state, strings.NewReader(c.input))
			if refused := errors.Is(err, ErrLeaseRefGuarded); refused != c.refused || (err != nil && !refused) {
				t.Fatalf("GuardLeaseRefs = %v, want refused %v", err, c.refused)
			}
			if c.refused && (!strings.Contains(err.Error(), "refs/leases/") || strings.Contains(err.Error(), "refs/heads/")) {
				t.Fatalf("the refusal should name the lease refs only: %v", err)
			}
		})
	}
	if err := GuardLeaseRefs("prepared", strings.NewReader("garbage\n")); err == nil {
		t.Fatal("malformed input was accepted")
	}
}

func TestPreReceiveLeavesOtherRefsAloneAndChecksItsInput(t *testing.T) {
	ctx := context.Background()
	// No lease ref: the repository is not even opened (dir does not exist).
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
