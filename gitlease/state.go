// Package gitlease runs execution leases: it provisions, runs, collects,
// verifies and records them, using refs for the git store, sandbox for the
// workspaces and verify for the rules.
package gitlease

import "fmt"

// State is where a lease is in its lifecycle; the log's messages carry
// its name (refs.State).
type State string

// The lifecycle states (ARCHITECTURE.md draws the table).
const (
	New          State = "new" // before the first log entry; never stored
	Provisioning State = "provisioning"
	Running      State = "running"
	Collecting   State = "collecting"
	Verifying    State = "verifying"
	Review       State = "review"
	Applied      State = "applied"
	Rejected     State = "rejected"
	Quarantined  State = "quarantined"
	Failed       State = "failed"
	Canceled     State = "canceled"
)

// transitions is the one table of legal state changes. A rebased lease
// goes from provisioning straight to collecting: its result comes from a
// merge, not from an agent. A canceled or failed lease is collected again
// on request (collect --partial): what its agent left goes through the same
// collection and verification as any result. A quarantined lease can only
// be applied in part: the paths that no finding names, verified again on
// their own.
var transitions = map[State][]State{
	New:          {Provisioning},
	Provisioning: {Running, Collecting, Failed},
	Running:      {Collecting, Failed, Canceled},
	Canceled:     {Collecting}, // collect --partial
	Failed:       {Collecting}, // collect --partial
	Collecting:   {Verifying, Failed},
	Verifying:    {Review, Quarantined, Failed},
	Review:       {Applied, Rejected},
	Quarantined:  {Applied}, // apply --only of the paths no finding names
}

// CanMove reports whether from -> to is a legal transition.
func CanMove(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// checkMove returns an error naming both states for an illegal transition.
func checkMove(from, to State) error {
	if !CanMove(from, to) {
		return fmt.Errorf("illegal lease transition %s -> %s", from, to)
	}
	return nil
}

// Settled reports whether the lifecycle has ended (no process works on it).
func (s State) Settled() bool {
	switch s {
	case Review, Applied, Rejected, Quarantined, Failed, Canceled:
		return true
	}
	return false
}

// Recorded reports whether s is a state a lease log records (any but New).
func (s State) Recorded() bool {
	switch s {
	case Provisioning, Running, Collecting, Verifying, Review, Applied, Rejected, Quarantined, Failed, Canceled:
		return true
	}
	return false
}
