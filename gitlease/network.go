package gitlease

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/netproxy"
	"github.com/git-lease/git-lease/verify"
)

// Rules of the network findings. They are stable: records store them.
const (
	// RuleNetworkRefused is a connection the proxy refused; the path is the
	// destination asked for.
	RuleNetworkRefused = "network-refused"
	// RuleNetworkBypass is traffic the sandbox's own network stack refused:
	// an attempt to leave without the proxy.
	RuleNetworkBypass = "network-bypass"
)

// networkFile holds a lease's network events in its log.
const networkFile = "network.json"

// maxNetworkFindings bounds the distinct refusals kept as findings; the
// rest are counted in one more.
const maxNetworkFindings = 64

// NetworkRecord is the bounded record of a lease's network in lease.json:
// totals over the connections through its proxy (the first ones in full in
// network.json) and what its sandbox refused without the proxy.
type NetworkRecord struct {
	// Allowed, Failed and Refused are the proxy's totals (netproxy.Summary).
	Allowed   int   `json:"allowed"`
	Failed    int   `json:"failed"`
	Refused   int   `json:"refused"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	// Omitted counts the connections beyond those listed in network.json.
	Omitted int            `json:"omitted"`
	Bypass  sandbox.Bypass `json:"bypass"`
	// Events is the log file listing the connections, when there was a proxy.
	Events string `json:"events,omitempty"`
}

// netResolve, when set (by tests), resolves names for lease proxies
// instead of the host's resolver.
var netResolve func(ctx context.Context, host string) ([]netip.Addr, error)

// leaseNetwork is a lease's proxy while its agent runs.
type leaseNetwork struct {
	proxy *netproxy.Proxy

	mu      sync.Mutex
	refused []refusal
	dropped int
}

// refusal is one refused destination, for a reason, and how often.
type refusal struct {
	dest, reason, detail string
	count                int
}

// startNetwork makes the lease's proxy, or returns nil when the allowlist
// is empty (no network). The sandbox hands it the socket to serve.
func startNetwork(allow netproxy.Allowlist) *leaseNetwork {
	if len(allow) == 0 {
		return nil
	}
	n := &leaseNetwork{}
	n.proxy = &netproxy.Proxy{Allow: allow, Resolve: netResolve, OnRefused: n.refuse}
	return n
}

// stop ends the proxy.
func (n *leaseNetwork) stop() {
	n.proxy.Close()
}

func (n *leaseNetwork) refuse(ev netproxy.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range n.refused {
		if r := &n.refused[i]; r.dest == ev.Dest && r.reason == ev.Reason {
			r.count++
			return
		}
	}
	if len(n.refused) == maxNetworkFindings {
		n.dropped++
		return
	}
	n.refused = append(n.refused, refusal{ev.Dest, ev.Reason, ev.Detail, 1})
}

// networkEvidence stops the proxy (n may be nil) and returns the lease's
// network record, its events file and its findings, with credential values
// redacted. The record is nil when there was no proxy and the sandbox
// refused nothing.
func networkEvidence(n *leaseNetwork, bypass sandbox.Bypass, r redactor) (*NetworkRecord, map[string][]byte, []verify.Finding) {
	rec := &NetworkRecord{Bypass: bypass}
	files := map[string][]byte{}
	var findings []verify.Finding
	if n != nil {
		n.stop()
		s := n.proxy.Summary()
		rec.Allowed, rec.Failed, rec.Refused, rec.BytesUp, rec.BytesDown, rec.Omitted = s.Allowed, s.Failed, s.Refused, s.BytesUp, s.BytesDown, s.Omitted
		b, _ := json.MarshalIndent(s, "", "  ")
		files[networkFile] = r.bytes(append(b, '\n'))
		rec.Events = networkFile
		n.mu.Lock()
		for _, ref := range n.refused {
			findings = append(findings, verify.Finding{
				Rule: RuleNetworkRefused, Path: r.string(ref.dest), Severity: refusalSeverity(ref.reason),
				Detail: r.string(fmt.Sprintf("%s, %d time(s): %s", ref.reason, ref.count, ref.detail)),
			})
		}
		if n.dropped > 0 {
			findings = append(findings, verify.Finding{Rule: RuleNetworkRefused, Path: "…", Severity: verify.SeverityMedium,
				Detail: fmt.Sprintf("%d more refused destinations (see %s)", n.dropped, networkFile)})
		}
		n.mu.Unlock()
	} else if bypass == (sandbox.Bypass{}) {
		return nil, files, nil
	}
	if bypass.NoRoute > 0 {
		findings = append(findings, verify.Finding{Rule: RuleNetworkBypass, Path: "no-route", Severity: verify.SeverityHigh,
			Detail: fmt.Sprintf("%d connection(s) or datagram(s) to addresses outside the sandbox, without the proxy (a direct connection, or a DNS query to an outside resolver); the sandbox has no route out", bypass.NoRoute)})
	}
	if bypass.ClosedUDP > 0 {
		findings = append(findings, verify.Finding{Rule: RuleNetworkBypass, Path: "loopback-udp", Severity: verify.SeverityMedium,
			Detail: fmt.Sprintf("%d UDP datagram(s) to a closed port of the sandbox's loopback (a DNS query to a local resolver lands here); the sandbox has no resolver", bypass.ClosedUDP)})
	}
	return rec, files, findings
}

// refusalSeverity rates a refusal: reaching for the host's own networks is
// an attack on the host; the rest are limits a user may lift in policy.
func refusalSeverity(reason string) string {
	switch reason {
	case netproxy.ReasonPrivateAddress:
		return verify.SeverityCritical
	case netproxy.ReasonIPLiteral:
		return verify.SeverityHigh
	}
	return verify.SeverityMedium
}
