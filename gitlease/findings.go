package gitlease

import (
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

// LeaseFinding is a security finding with the lease it belongs to.
type LeaseFinding struct {
	Lease refs.ID `json:"lease"`
	State State   `json:"state"`
	verify.Finding
}

// Findings lists the findings of the given leases (all, when none are
// given), newest lease first.
func Findings(repo *refs.Repo, only ...refs.ID) ([]LeaseFinding, error) {
	var leases []*Execution
	if len(only) == 0 {
		all, err := List(repo)
		if err != nil {
			return nil, err
		}
		leases = all
	}
	for _, id := range only {
		x, err := Load(repo, id)
		if err != nil {
			return nil, err
		}
		leases = append(leases, x)
	}
	out := []LeaseFinding{}
	for _, x := range leases {
		for _, f := range x.Lease.Findings {
			out = append(out, LeaseFinding{Lease: x.Lease.ID, State: x.Lease.State, Finding: f})
		}
	}
	return out, nil
}
