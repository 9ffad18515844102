package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
)

// open decides whether t may be reached and, if so, dials it: an IP
// address as given, a name at the addresses resolved for this decision and
// no others, so that no second lookup can answer differently (DNS
// rebinding). It fills ev's Addr, Allowed, Reason and Detail, and returns
// the connection, or nil and the status to answer.
func (p *Proxy) open(ctx context.Context, t target, ev *Event) (net.Conn, int) {
	if t.host == HostAlias {
		service, ok := p.Allow.hostService(t.port)
		if !ok {
			ev.Reason = ReasonNotAllowlisted
			ev.Detail = fmt.Sprintf("%s is the host's loopback: allow 127.0.0.1:%d in the user's policy ([network] allow)", t, t.port)
			return nil, http.StatusForbidden
		}
		t = service
	}
	d := p.Allow.Check(t.host, t.port)
	if !d.Allowed {
		ev.Reason = d.Reason
		ev.Detail = "not in the lease's network allowlist ([network] allow in the user's policy)"
		if t.ip {
			ev.Detail = "an IP address is allowed only when the allowlist lists it with its port"
		}
		return nil, http.StatusForbidden
	}
	ev.Allowed = true
	var addrs []netip.Addr
	if t.ip {
		addrs = []netip.Addr{netip.MustParseAddr(t.host)} // canonHost parsed it
	} else {
		var err error
		if addrs, err = p.resolve(ctx, t.host); err != nil {
			ev.Reason, ev.Detail = ReasonResolveFailed, bounded(err.Error())
			return nil, http.StatusBadGateway
		}
	}
	if !d.Verbatim {
		for _, a := range addrs {
			if special(a) {
				ev.Allowed, ev.Addr, ev.Reason = false, a.String(), ReasonPrivateAddress
				ev.Detail = "resolves to a loopback, private or link-local address; only a destination listed verbatim may"
				return nil, http.StatusForbidden
			}
		}
	}
	var errs []error
	for _, a := range addrs {
		addr := netip.AddrPortFrom(a.Unmap().WithZone(""), uint16(t.port)).String()
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := p.dial(dctx, addr)
		cancel()
		if err == nil {
			ev.Addr = addr
			return c, 0
		}
		errs = append(errs, err)
	}
	ev.Reason, ev.Detail = ReasonDialFailed, bounded(errors.Join(errs...).Error())
	return nil, http.StatusBadGateway
}

// resolve returns a name's addresses, or an error when it has none.
func (p *Proxy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	var addrs []netip.Addr
	var err error
	if p.Resolve != nil {
		addrs, err = p.Resolve(ctx, host)
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("%s has no addresses", host)
	}
	return addrs, err
}

func (p *Proxy) dial(ctx context.Context, addr string) (net.Conn, error) {
	if p.Dial != nil {
		return p.Dial(ctx, "tcp", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
