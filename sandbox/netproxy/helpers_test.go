package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeNet stands in for DNS and the internet: names resolve to public
// test addresses (203.0.113.0/24), and dialing one of those reaches a
// server on the host's loopback.
type fakeNet struct {
	mu     sync.Mutex
	hosts  map[string][]netip.Addr
	routes map[string]string // dialed address -> real loopback address
	dialed []string
}

func newFakeNet() *fakeNet {
	return &fakeNet{hosts: map[string][]netip.Addr{}, routes: map[string]string{}}
}

// host makes name resolve to addrs.
func (n *fakeNet) host(name string, addrs ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range addrs {
		n.hosts[name] = append(n.hosts[name], netip.MustParseAddr(a))
	}
}

// route makes a dial of addr reach real.
func (n *fakeNet) route(addr, real string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routes[addr] = real
}

func (n *fakeNet) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.hosts[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("lookup %s: no such host", host)
}

func (n *fakeNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	n.dialed = append(n.dialed, addr)
	real, ok := n.routes[addr]
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, real)
}

func (n *fakeNet) dials() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.dialed)
}

// serveProxy wires p to n (when n is not nil; a Resolve set in p stays),
// serves it on a Unix socket and returns the socket's path. Cleanup closes
// it and checks that Serve returned ErrClosed.
func serveProxy(t *testing.T, p *Proxy, n *fakeNet) string {
	t.Helper()
	if n != nil {
		p.Dial = n.dial
		if p.Resolve == nil {
			p.Resolve = n.resolve
		}
	}
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return sock
}

// dialUnix connects to the proxy's socket, with a deadline so that a
// hanging proxy fails the test.
func dialUnix(t *testing.T, sock string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// exchange sends raw on a new connection to the proxy and reads the
// proxy's answer, with the reader positioned after its header (a CONNECT
// tunnel's start).
func exchange(t *testing.T, sock, raw string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c := dialUnix(t, sock)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	method := "GET"
	if len(raw) > 7 && raw[:7] == "CONNECT" {
		method = "CONNECT"
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the proxy's answer to %q: %v", raw, err)
	}
	return resp, c, br
}

// connect sends CONNECT dest and returns the proxy's answer.
func connect(t *testing.T, sock, dest string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	return exchange(t, sock, "CONNECT "+dest+" HTTP/1.1\r\nHost: "+dest+"\r\n\r\n")
}

// mustAllow parses destinations.
func mustAllow(t testing.TB, dests ...string) Allowlist {
	t.Helper()
	var a Allowlist
	for _, s := range dests {
		d, err := ParseDest(s)
		if err != nil {
			t.Fatal(err)
		}
		a = append(a, d)
	}
	return a
}

// summaryAfterClose closes p and returns its complete record.
func summaryAfterClose(p *Proxy) Summary {
	p.Close()
	return p.Summary()
}
