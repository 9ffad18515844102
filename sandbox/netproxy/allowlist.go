package netproxy

import (
	"errors"
	"fmt"
)

// ErrWiden is returned by Narrow for a destination that trusted policy
// does not allow.
var ErrWiden = errors.New("not in the trusted network allowlist: a repository's .lease.toml or --net may only pick from [network] allow in the user's policy")

// Allowlist is the set of destinations a lease may reach. The empty
// allowlist allows nothing.
type Allowlist []Dest

// Decision is an allowlist's answer for one host:port.
type Decision struct {
	// Allowed is true when a destination covers host:port.
	Allowed bool
	// Verbatim is true when host:port itself is listed, not through a
	// wildcard: only then may a name resolve to a private address.
	Verbatim bool
	// Reason is ReasonIPLiteral or ReasonNotAllowlisted when refused.
	Reason string
}

// Check decides whether host:port may be reached. An IP address is allowed
// only when that exact address and port are listed; a name when a listed
// name or wildcard covers it on that port. Host is read as Covers reads it.
func (a Allowlist) Check(host string, port int) Decision {
	var d Decision
	for _, dest := range a {
		if dest.Covers(host, port) {
			d.Allowed = true
			d.Verbatim = d.Verbatim || dest.verbatim()
		}
	}
	if !d.Allowed {
		d.Reason = ReasonNotAllowlisted
		if _, ip, err := canonHost(host); err == nil && ip {
			d.Reason = ReasonIPLiteral
		}
	}
	return d
}

// verbatim reports whether the destination names one host listed as such
// in trusted policy.
func (d Dest) verbatim() bool { return !d.Wildcard && !d.viaWildcard }

// Narrow returns the destinations of req that a allows, as an allowlist
// for the proxy, or an error wrapping ErrWiden that names the first one it
// does not allow. A name or wildcard of req is allowed when a covers it on
// the same port, an IP address only when a lists it. A name that a allows
// only through a wildcard keeps that wildcard's limit: it may not resolve
// to a private address, although req lists it verbatim.
func (a Allowlist) Narrow(req Allowlist) (Allowlist, error) {
	out := make(Allowlist, 0, len(req))
	for _, r := range req {
		covered, verbatim := false, false
		for _, t := range a {
			if t.includes(r) {
				covered = true
				verbatim = verbatim || (t.verbatim() && r.verbatim())
			}
		}
		if !covered {
			return nil, fmt.Errorf("network destination %s: %w", r, ErrWiden)
		}
		r.viaWildcard = !r.Wildcard && !verbatim
		out = append(out, r)
	}
	return out, nil
}

// includes reports whether every connection r allows, d allows too.
func (d Dest) includes(r Dest) bool {
	if !r.Wildcard {
		return d.Covers(r.Host, r.Port)
	}
	return d.Wildcard && d.Port == r.Port && (r.Host == d.Host || d.Covers(r.Host, r.Port))
}

// HostAlias is the name by which a sandbox reaches a service on the host's
// own loopback (a local model server): inside, 127.0.0.1 is the sandbox's
// loopback, and NO_PROXY keeps it off the proxy. The proxy alone gives the
// name a meaning, so the sandbox needs no resolver for it, and no wildcard
// or DNS answer can stand in for it.
const HostAlias = "host.lease.internal"

// hostService returns the loopback destination that HostAlias:port stands
// for: the first of 127.0.0.1, ::1 and localhost that the allowlist lists
// verbatim on that port, or false when it lists none.
func (a Allowlist) hostService(port int) (target, bool) {
	for _, h := range []string{"127.0.0.1", "::1", "localhost"} {
		if d := a.Check(h, port); d.Allowed && d.Verbatim {
			return target{host: h, port: port, ip: h != "localhost"}, true
		}
	}
	return target{}, false
}
