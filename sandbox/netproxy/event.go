package netproxy

import (
	"strings"
	"time"
)

// Reasons. They are stable: lease records store them. The first four
// refuse a connection (Allowed is false) and are security findings; the
// last two are failures to reach a destination that policy allowed.
const (
	ReasonNotAllowlisted = "not-allowlisted" // no destination covers the name and port
	ReasonIPLiteral      = "ip-literal"      // an IP address that is not listed with its port
	ReasonPrivateAddress = "private-address" // a name resolved to a special address and is not listed verbatim
	ReasonBadRequest     = "bad-request"     // not a proxy request the proxy understands
	ReasonResolveFailed  = "resolve-failed"  // the name did not resolve
	ReasonDialFailed     = "dial-failed"     // no resolved address answered
)

// DefaultMaxEvents is the number of events a Proxy keeps when MaxEvents is
// zero.
const DefaultMaxEvents = 256

// maxField bounds the text an agent controls in an event (a refused
// request's target, an error quoting it), so that evidence stays small.
const maxField = 256

// Event is one connection through the proxy, as evidence for the lease.
type Event struct {
	Time time.Time `json:"time"`
	// Dest is the host:port the agent asked for (in canonical form, or as
	// sent, bounded, for a bad request).
	Dest string `json:"dest"`
	// Addr is the address dialed, or the special address that a name
	// resolved to when it was refused for it.
	Addr string `json:"addr,omitempty"`
	// Allowed is whether policy let the connection through.
	Allowed bool `json:"allowed"`
	// Reason is one of the Reason… names, or empty for a connection that
	// was allowed and made.
	Reason string `json:"reason,omitempty"`
	// Detail is a short explanation for a person.
	Detail string `json:"detail,omitempty"`
	// BytesUp and BytesDown count the bytes sent to and received from the
	// destination (for CONNECT, the tunnel's payload).
	BytesUp   int64         `json:"bytes_up"`
	BytesDown int64         `json:"bytes_down"`
	Duration  time.Duration `json:"duration_ns"`
}

// Summary is a proxy's bounded record: the first events in full, and
// totals over every connection.
type Summary struct {
	// Events are recorded as connections end, in that order: a tunnel
	// that stays open appears when it closes (at the latest, at Close).
	Events []Event `json:"events"`
	// Omitted counts the events beyond the ones kept.
	Omitted int `json:"omitted"`
	// Allowed counts the connections made; Failed those that policy
	// allowed but that did not reach their destination (the name did not
	// resolve, no address answered); Refused those that policy refused.
	Allowed   int   `json:"allowed"`
	Failed    int   `json:"failed"`
	Refused   int   `json:"refused"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// add counts ev and keeps it while fewer than max events are kept.
func (s *Summary) add(ev Event, max int) {
	switch {
	case ev.Allowed && (ev.Reason == ReasonResolveFailed || ev.Reason == ReasonDialFailed):
		s.Failed++
	case ev.Allowed:
		s.Allowed++
	default:
		s.Refused++
	}
	s.BytesUp += ev.BytesUp
	s.BytesDown += ev.BytesDown
	if len(s.Events) < max {
		s.Events = append(s.Events, ev)
	} else {
		s.Omitted++
	}
}

// bounded cuts agent-controlled text to maxField bytes of valid UTF-8.
func bounded(s string) string {
	if len(s) > maxField {
		s = s[:maxField]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
