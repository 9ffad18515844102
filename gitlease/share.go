package gitlease

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
)

// worthSharing are the states of the leases git lease push sends when given
// no IDs: a result to review, or a decision on one.
var worthSharing = []State{Review, Quarantined, Applied, Rejected}

// PushReport says what Push sent and what it kept back, and why.
type PushReport struct {
	Pushed []*Execution
	// Kept counts, by state, the leases a push without IDs left out
	// (neither reviewable nor decided; --all sends them).
	Kept map[State]int
	// Withheld are trusted_local leases, which stay local (Shareable).
	Withheld []*Execution
}

// Push sends leases to remote with their logs, review branches and notes,
// all or nothing: the leases named by prefixes, or else every lease worth
// sharing (all: every lease), less the trusted_local ones Shareable
// withholds. Each lease it sends is read and validated first (loading it
// reads its record).
func Push(ctx context.Context, repo *refs.Repo, remote string, prefixes []string, all bool) (*PushReport, error) {
	rep := &PushReport{Kept: map[State]int{}}
	var leases []*Execution
	if len(prefixes) == 0 {
		every, err := List(repo)
		if err != nil {
			return nil, err
		}
		for _, x := range every {
			if all || slices.Contains(worthSharing, x.Lease.State) {
				leases = append(leases, x)
			} else {
				rep.Kept[x.Lease.State]++
			}
		}
	}
	seen := map[refs.ID]bool{}
	for _, p := range prefixes {
		x, err := LoadPrefix(repo, p)
		if err != nil {
			return nil, err
		}
		if !seen[x.Lease.ID] {
			seen[x.Lease.ID] = true
			leases = append(leases, x)
		}
	}
	share, withheld, err := Shareable(ctx, repo, leases)
	if err != nil {
		return nil, err
	}
	rep.Withheld = withheld
	if len(share) == 0 {
		return rep, nil
	}
	ids := make([]refs.ID, 0, len(share))
	for _, x := range share {
		ids = append(ids, x.Lease.ID)
	}
	if err := repo.PushLeases(ctx, remote, ids); err != nil {
		return nil, err
	}
	rep.Pushed = share
	return rep, nil
}

// Fetch fetches remote's leases, revocations and notes. With allowed
// signers configured (FetchSigners), each incoming lease is verified
// against them before it is written (CheckIncoming); without, it is only
// read.
func Fetch(ctx context.Context, repo *refs.Repo, remote string) (*refs.FetchReport, error) {
	allowed, err := FetchSigners(repo)
	if err != nil {
		return nil, err
	}
	return repo.FetchLeasesChecked(ctx, remote, func(id refs.ID, tip plumbing.Hash) error {
		return CheckIncoming(ctx, repo, remote, id, tip, allowed)
	})
}

// Shareable splits leases into those git lease push sends and those it
// withholds: a trusted_local lease ran unsandboxed, as its owner, in the
// owner's environment, so it stays local unless git config
// lease.shareTrustedLocal is true. A value git does not read as a boolean
// is an error.
func Shareable(ctx context.Context, repo *refs.Repo, leases []*Execution) (share, withheld []*Execution, err error) {
	out, err := repo.Git(ctx, nil, "config", "--type=bool", "--get", "lease.shareTrustedLocal")
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: unset
		return nil, nil, fmt.Errorf("lease.shareTrustedLocal: %w (set it to true or false)", err)
	}
	shareTrusted := strings.TrimSpace(string(out)) == "true"
	for _, x := range leases {
		if x.Lease.Mode == TrustedLocal && !shareTrusted {
			withheld = append(withheld, x)
		} else {
			share = append(share, x)
		}
	}
	return share, withheld, nil
}
