package gitlease

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

// maxStoredFindings bounds the findings a lease record keeps, in lease.json
// and findings.json, which every teammate fetches and ls reads: a result
// with 100,000 bad paths would otherwise make a record of megabytes. A
// reviewer decides on the first few; the rest are counted.
const maxStoredFindings = 100

// RuleFindingsOmitted names, in listings of findings, the count of a
// lease's findings that its record left out. It is not stored.
const RuleFindingsOmitted = "findings-omitted"

// addFindings adds found to the record's findings, keeping the first
// maxStoredFindings and counting the rest in FindingsOmitted.
func (l *Lease) addFindings(found []verify.Finding) {
	room := max(maxStoredFindings-len(l.Findings), 0)
	if len(found) > room {
		l.FindingsOmitted += len(found) - room
		found = found[:room]
	}
	l.Findings = append(slices.Clip(l.Findings), found...)
}

// marshalFindings is findings.json.
func marshalFindings(findings []verify.Finding) []byte {
	b, _ := json.MarshalIndent(findings, "", "  ")
	return append(b, '\n')
}

// LeaseFinding is a security finding with the lease it belongs to.
type LeaseFinding struct {
	Lease refs.ID `json:"lease"`
	State State   `json:"state"`
	verify.Finding
}

// Findings lists the findings of the given leases (all, when none are
// given), newest lease first. A lease whose record left findings out ends
// with a RuleFindingsOmitted entry that counts them.
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
		if n := x.Lease.FindingsOmitted; n > 0 {
			out = append(out, LeaseFinding{Lease: x.Lease.ID, State: x.Lease.State, Finding: verify.Finding{
				Rule: RuleFindingsOmitted, Path: "…", Severity: verify.SeverityMedium,
				Detail: fmt.Sprintf("%d more findings, not recorded: a lease record keeps the first %d", n, maxStoredFindings),
			}})
		}
	}
	return out, nil
}
