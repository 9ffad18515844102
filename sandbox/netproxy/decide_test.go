package netproxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// sink is a TCP server on loopback that accepts and drains connections.
func sink(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return l.Addr().String()
}

// testNet resolves the names of TestDecisions and routes every address
// they resolve to, private ones included, to one sink: a refusal is the
// proxy's doing, never the network's.
func testNet(t *testing.T) *fakeNet {
	n := newFakeNet()
	real := sink(t)
	for name, addr := range map[string]string{
		"api.test": "203.0.113.10", "a.example.org": "203.0.113.11", "a.b.example.org": "203.0.113.12",
		"example.org": "203.0.113.13", "evilexample.org": "203.0.113.14", "down.test": "203.0.113.99",
		"loop.test": "127.0.0.1", "ten.test": "10.1.2.3", "meta.test": "169.254.169.254", "six.test": "::1",
		"mapped.test": "::ffff:10.0.0.1", "cgnat.test": "100.64.0.1", "ula.test": "fd00::1",
		"zero.test": "0.0.0.0", "nat64.test": "64:ff9b::a00:1", "localhost": "127.0.0.1",
	} {
		n.host(name, addr)
		if name != "down.test" {
			n.route(netip.AddrPortFrom(netip.MustParseAddr(addr).Unmap(), 443).String(), real)
		}
	}
	n.host("mixed.test", "203.0.113.10", "192.168.1.1")
	n.route("192.168.1.1:443", real)
	return n
}

func TestDecisions(t *testing.T) {
	narrowed, err := mustAllow(t, "*.test:443").Narrow(mustAllow(t, "loop.test:443"))
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name   string
		allow  Allowlist
		dest   string
		status int
		reason string
	}
	cases := []tc{
		{"an allowlisted name", mustAllow(t, "api.test:443"), "api.test:443", 200, ""},
		{"a name not in the allowlist", mustAllow(t, "api.test:443"), "other.test:443", 403, ReasonNotAllowlisted},
		{"an allowlisted name on another port", mustAllow(t, "api.test:443"), "api.test:8443", 403, ReasonNotAllowlisted},
		{"an IP literal", mustAllow(t, "api.test:443"), "203.0.113.10:443", 403, ReasonIPLiteral},
		{"an allowlisted IP literal", mustAllow(t, "203.0.113.10:443"), "203.0.113.10:443", 200, ""},
		{"an IP literal allowlisted on another port", mustAllow(t, "203.0.113.10:80"), "203.0.113.10:443", 403, ReasonIPLiteral},
		{"an allowlisted loopback IP literal", mustAllow(t, "127.0.0.1:443"), "127.0.0.1:443", 200, ""},
		{"an IPv4-mapped spelling of an allowlisted IP", mustAllow(t, "127.0.0.1:443"), "[::ffff:127.0.0.1]:443", 200, ""},
		{"a wildcard's subdomain", mustAllow(t, "*.example.org:443"), "a.example.org:443", 200, ""},
		{"a wildcard's deeper subdomain", mustAllow(t, "*.example.org:443"), "a.b.example.org:443", 200, ""},
		{"a wildcard's own domain", mustAllow(t, "*.example.org:443"), "example.org:443", 403, ReasonNotAllowlisted},
		{"a name that ends like a wildcard's domain", mustAllow(t, "*.example.org:443"), "evilexample.org:443", 403, ReasonNotAllowlisted},
		{"a name that resolves to public and private addresses", mustAllow(t, "*.test:443"), "mixed.test:443", 403, ReasonPrivateAddress},
		{"a name allowed through a narrowed wildcard", narrowed, "loop.test:443", 403, ReasonPrivateAddress},
		{"a name that does not resolve", mustAllow(t, "*.test:443"), "nohost.test:443", 502, ReasonResolveFailed},
		{"a name whose address does not answer", mustAllow(t, "*.test:443"), "down.test:443", 502, ReasonDialFailed},
		{"the host alias for an allowlisted 127.0.0.1", mustAllow(t, "127.0.0.1:443"), HostAlias + ":443", 200, ""},
		{"the host alias for an allowlisted ::1", mustAllow(t, "[::1]:443"), HostAlias + ":443", 200, ""},
		{"the host alias for an allowlisted localhost", mustAllow(t, "localhost:443"), HostAlias + ":443", 200, ""},
		{"the host alias in capitals with a trailing dot", mustAllow(t, "127.0.0.1:443"), "HOST.Lease.Internal.:443", 200, ""},
		{"the host alias on a port not allowlisted", mustAllow(t, "127.0.0.1:80"), HostAlias + ":443", 403, ReasonNotAllowlisted},
		{"the host alias under an allowlisted wildcard", mustAllow(t, "*.lease.internal:443", "*.internal:443"), HostAlias + ":443", 403, ReasonNotAllowlisted},
		{"the host alias when only a name for loopback is listed", mustAllow(t, "loop.test:443"), HostAlias + ":443", 403, ReasonNotAllowlisted},
	}
	for _, name := range []string{"loop", "ten", "meta", "six", "mapped", "cgnat", "ula", "zero", "nat64"} {
		dest := name + ".test:443"
		cases = append(cases,
			tc{"a wildcard's name that resolves to " + name, mustAllow(t, "*.test:443"), dest, 403, ReasonPrivateAddress},
			tc{"a verbatim name that resolves to " + name, mustAllow(t, dest), dest, 200, ""})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := testNet(t)
			var resolved []string
			p := &Proxy{Allow: c.allow, Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
				resolved = append(resolved, host)
				return n.resolve(ctx, host)
			}}
			sock := serveProxy(t, p, n)
			resp, _, _ := connect(t, sock, c.dest)
			if resp.StatusCode != c.status {
				t.Fatalf("CONNECT %s: %s, want %d", c.dest, resp.Status, c.status)
			}
			s := summaryAfterClose(p)
			ev := s.Events[0]
			totals := map[int][3]int{200: {1, 0, 0}, 502: {0, 1, 0}, 403: {0, 0, 1}}
			if got := [3]int{s.Allowed, s.Failed, s.Refused}; got != totals[c.status] {
				t.Fatalf("allowed, failed, refused: %v, want %v", got, totals[c.status])
			}
			refused := c.status == 403
			if ev.Reason != c.reason || ev.Allowed == refused {
				t.Fatalf("event %+v, want reason %q", ev, c.reason)
			}
			dialed := n.dials()
			switch {
			case refused && len(dialed) > 0:
				t.Fatalf("a refused destination was dialed: %v", dialed)
			case c.status == 200 && (len(dialed) != 1 || dialed[0] != ev.Addr):
				t.Fatalf("dialed %v, event says %q", dialed, ev.Addr)
			case (c.reason == ReasonNotAllowlisted || c.reason == ReasonIPLiteral) && len(resolved) > 0:
				t.Fatalf("a refused name was looked up (a DNS leak): %v", resolved)
			case c.reason == ReasonPrivateAddress && !special(netip.MustParseAddr(ev.Addr)):
				t.Fatalf("event names %q as the private address", ev.Addr)
			}
		})
	}
}

// TestRebindingCannotReachAPrivateAddress gives the proxy a resolver that
// answers differently on every call, public or private, and checks that
// every dial went to a vetted public address, once per request.
func TestRebindingCannotReachAPrivateAddress(t *testing.T) {
	answers := [][]netip.Addr{
		{netip.MustParseAddr("203.0.113.10")},
		{netip.MustParseAddr("127.0.0.1")},
		{netip.MustParseAddr("203.0.113.10"), netip.MustParseAddr("10.0.0.1")},
		{netip.MustParseAddr("::ffff:169.254.169.254")},
	}
	n := testNet(t)
	n.route("10.0.0.1:443", n.routes["127.0.0.1:443"])
	n.route("169.254.169.254:443", n.routes["127.0.0.1:443"])
	var mu sync.Mutex
	calls := 0
	p := &Proxy{Allow: mustAllow(t, "*.test:443"), Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return answers[calls%len(answers)], nil
	}}
	sock := serveProxy(t, p, n)
	const requests = 40
	ok := 0
	for range requests {
		resp, _, _ := connect(t, sock, "rebind.test:443")
		if resp.StatusCode == 200 {
			ok++
		}
	}
	s := summaryAfterClose(p)
	for _, d := range n.dials() {
		if ap, err := netip.ParseAddrPort(d); err != nil || special(ap.Addr()) {
			t.Errorf("dialed %q", d)
		}
	}
	if calls != requests || ok != requests/len(answers) || s.Refused != requests-ok || len(n.dials()) != ok {
		t.Fatalf("%d lookups, %d tunnels, %d dials, summary %+v", calls, ok, len(n.dials()), s)
	}
}

// TestTunnelBytesAreCountedAndHalfClosesPass has a client that half-closes
// its end of the tunnel and still gets the server's answer.
func TestTunnelBytesAreCountedAndHalfClosesPass(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		io.Copy(io.Discard, c) // until the client half-closes
		c.Write(bytes.Repeat([]byte("d"), 2345))
		c.Close()
	}()
	n := newFakeNet()
	n.host("api.test", "203.0.113.10")
	n.route("203.0.113.10:443", l.Addr().String())
	p := &Proxy{Allow: mustAllow(t, "api.test:443")}
	sock := serveProxy(t, p, n)
	resp, c, br := connect(t, sock, "api.test:443")
	if resp.StatusCode != 200 {
		t.Fatalf("status %s", resp.Status)
	}
	c.Write([]byte(strings.Repeat("u", 1000)))
	c.(*net.UnixConn).CloseWrite() // the server answers only then
	down, err := io.ReadAll(br)
	if err != nil || len(down) != 2345 {
		t.Fatalf("read %d bytes, %v", len(down), err)
	}
	c.Close()
	s := summaryAfterClose(p)
	if ev := s.Events[0]; ev.BytesUp != 1000 || ev.BytesDown != 2345 || s.BytesUp != 1000 || s.BytesDown != 2345 {
		t.Fatalf("summary %+v", s)
	}
}
