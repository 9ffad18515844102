package refs

import (
	"fmt"
	"regexp"
	"strings"
)

// The messages of the commits git-lease writes, formatted and parsed here
// only. A lease-log entry's subject reads as the lease's history in git
// log ("lease <id>: <from> -> <to>" for a transition, "lease <id>:
// <state>: <event>" for an event); a commit on a lease's branch says what
// it changes ("lease <id>: <summary>"). Trailers name the lease, its state,
// event and reason, or the base a branch commit was made on.
const (
	TrailerID          = "Lease-ID"
	TrailerState       = "Lease-State"
	TrailerEvent       = "Lease-Event"
	TrailerReason      = "Lease-Reason"
	TrailerBase        = "Lease-Base"
	TrailerRebasedFrom = "Lease-Rebased-From"
	TrailerSnapshotOf  = "Lease-Snapshot-Of"
	TrailerRevocation  = "Lease-Revocation"
	TrailerScope       = "Lease-Scope"
	TrailerPolicy      = "Lease-Policy"
	TrailerGateKernel  = "Lease-Gate-Kernel"
	TrailerGateVersion = "Lease-Gate-Git-Lease"
)

// State is a lifecycle state's name as a log message writes it. Which
// states exist and which transitions are legal is the lifecycle's
// (gitlease); here a state is only a lowercase word.
type State string

// Event names something that happened to a lease without changing its
// state: a lowercase word, then words or lease IDs, joined by dashes
// ("cleanup-recorded", "child-<id>").
type Event string

var (
	stateName = regexp.MustCompile(`^[a-z]+$`)
	eventName = regexp.MustCompile(`^[a-z]+(-[a-z0-9]+)*$`)
)

// Entry is what a lease-log entry's subject says: a transition From -> To,
// or an Event in state To (From == To).
type Entry struct {
	ID       ID
	From, To State
	Event    Event
}

// TransitionMessage is the message of a log entry that moves lease id from
// one state to another. reason, when not empty, is already one line.
func TransitionMessage(id ID, from, to State, reason string) (string, error) {
	if err := checkNames(id, from, to, ""); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("lease %s: %s -> %s\n\n%s: %s\n%s: %s\n", id, from, to, TrailerID, id, TrailerState, to)
	if reason != "" {
		if strings.ContainsAny(reason, "\r\n") {
			return "", fmt.Errorf("a log message's reason must be one line: %q", reason)
		}
		msg += fmt.Sprintf("%s: %s\n", TrailerReason, reason)
	}
	return msg, nil
}

// EventMessage is the message of a log entry that records event in state.
func EventMessage(id ID, state State, event Event) (string, error) {
	if err := checkNames(id, state, state, event); err != nil {
		return "", err
	}
	return fmt.Sprintf("lease %s: %s: %s\n\n%s: %s\n%s: %s\n%s: %s\n", id, state, event, TrailerID, id, TrailerState, state, TrailerEvent, event), nil
}

// BranchMessage is the message of a commit git-lease makes on a lease's
// branch (a result, a promoted part of one, edits found at cleanup):
// "<mission>: <summary>", or "lease <id>: <summary>" for a lease without a
// mission, then Lease-ID and, when base is not empty, Lease-Base and, when
// rebasedFrom is not empty, Lease-Rebased-From. A result's is the message
// apply puts on your branch unless you give one.
func BranchMessage(id ID, mission, summary, base, rebasedFrom string) string {
	topic := "lease " + string(id)
	if mission := oneLineSubject(mission); mission != "" {
		topic = mission
	}
	msg := fmt.Sprintf("%s: %s\n\n%s: %s\n", topic, oneLineSubject(summary), TrailerID, id)
	if base != "" {
		msg += fmt.Sprintf("%s: %s\n", TrailerBase, base)
	}
	if rebasedFrom != "" {
		msg += fmt.Sprintf("%s: %s\n", TrailerRebasedFrom, rebasedFrom)
	}
	return msg
}

// AppliedMessage is a person's own message for the commit that applies
// lease id's result, with the Lease-ID trailer.
func AppliedMessage(id ID, message string) string {
	return strings.TrimRight(message, "\n") + fmt.Sprintf("\n\n%s: %s\n", TrailerID, id)
}

// SnapshotMessage is the message of the commit that snapshots uncommitted
// changes on top of of, as a lease's base.
func SnapshotMessage(of string) string {
	return fmt.Sprintf("lease snapshot of uncommitted changes\n\n%s: %s\n", TrailerSnapshotOf, of)
}

// RevocationMessage is the message of a decision on the revocation log:
// action "revoke" (with its cancellation policy and reason) or "lift", of
// scope (the repository or a mission).
func RevocationMessage(action, scope, policy, reason string) string {
	msg := fmt.Sprintf("lease revocations: %s %s\n\n%s: %s\n%s: %s\n", action, oneLineSubject(scope), TrailerRevocation, action, TrailerScope, oneLineSubject(scope))
	if policy != "" {
		msg += fmt.Sprintf("%s: %s\n", TrailerPolicy, policy)
	}
	if reason != "" {
		msg += fmt.Sprintf("%s: %s\n", TrailerReason, oneLineSubject(reason))
	}
	return msg
}

// GateMessage is the message of a gate record's commit on
// refs/lease-gates/<provider>/<supervisor>.
func GateMessage(provider, supervisor, outcome, kernel, version string) string {
	return fmt.Sprintf("lease gate %s/%s: %s\n\n%s: %s\n%s: %s\n", provider, supervisor, outcome, TrailerGateKernel, oneLineSubject(kernel), TrailerGateVersion, oneLineSubject(version))
}

// ParseEntry reads a lease-log entry's subject (the message's first line).
func ParseEntry(message string) (Entry, error) {
	subject, _, _ := strings.Cut(message, "\n")
	rest, ok := strings.CutPrefix(subject, "lease ")
	if !ok {
		return Entry{}, fmt.Errorf("%q is not a lease-log subject", subject)
	}
	idText, rest, _ := strings.Cut(rest, ": ")
	id, err := ParseID(idText)
	if err != nil {
		return Entry{}, fmt.Errorf("%q is not a lease-log subject", subject)
	}
	e := Entry{ID: id}
	if from, to, ok := strings.Cut(rest, " -> "); ok {
		e.From, e.To = State(from), State(to)
	} else if state, event, ok := strings.Cut(rest, ": "); ok {
		e.From, e.To, e.Event = State(state), State(state), Event(event)
	}
	if e.To == "" || checkNames(e.ID, e.From, e.To, e.Event) != nil {
		return Entry{}, fmt.Errorf("%q is not a lease-log subject", subject)
	}
	return e, nil
}

func checkNames(id ID, from, to State, event Event) error {
	if _, err := ParseID(string(id)); err != nil {
		return err
	}
	for _, s := range []State{from, to} {
		if !stateName.MatchString(string(s)) {
			return fmt.Errorf("%q is not a lease state", s)
		}
	}
	if event != "" && !eventName.MatchString(string(event)) {
		return fmt.Errorf("%q is not a lease event", event)
	}
	return nil
}

// oneLineSubject keeps a subject on its line.
func oneLineSubject(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
