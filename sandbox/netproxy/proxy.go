// Package netproxy gives a sandbox with its own empty network namespace
// access to an allowlist of destinations, and nothing else. On the host,
// a Proxy speaks HTTP CONNECT and plain proxied HTTP on a Unix socket bound
// into the sandbox; it decides every connection against the allowlist,
// resolves names itself, refuses private addresses, dials only the address
// it vetted, and keeps a bounded record as evidence. In the sandbox,
// Forward relays the agent's TCP connections on loopback to that socket,
// and ProxyEnv points the agent's HTTP clients at it.
package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// ErrClosed is returned by Serve once Close has been called.
var ErrClosed = errors.New("network proxy closed")

// Bounds of one connection. The agent's wall-time limit bounds the rest.
const (
	maxHeaderBytes = 64 << 10
	headerTimeout  = 30 * time.Second
	resolveTimeout = 10 * time.Second
	dialTimeout    = 10 * time.Second // for each resolved address
	// maxConns bounds the connections served at once, so that an agent
	// cannot exhaust the host's file descriptors: beyond it, Serve stops
	// accepting until one ends.
	maxConns = 256
)

// Proxy is the host side of a lease's network: a filtering HTTP proxy.
// Set its fields before Serve and do not change them after. The zero
// Proxy allows nothing.
type Proxy struct {
	// Allow is the lease's allowlist (already narrowed).
	Allow Allowlist
	// Resolve returns a name's addresses. Nil means the host's resolver
	// (with /etc/hosts and search domains: whatever a name turns out to
	// mean, its addresses are checked).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to an IP address and port; the proxy never passes it a
	// name. Nil means a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxEvents bounds the events kept in the Summary; zero means
	// DefaultMaxEvents.
	MaxEvents int
	// OnRefused, when set, is called with every refused connection's event,
	// kept or not, so that the caller can record it as a security finding.
	// It is called from the connections' goroutines, possibly at once, and
	// must not block for long.
	OnRefused func(Event)

	mu      sync.Mutex
	ctx     context.Context // ends at Close; every connection ends with it
	cancel  context.CancelFunc
	closed  bool
	wg      sync.WaitGroup
	summary Summary
}

// Serve accepts connections on l and serves each on its own goroutine
// until Close, then returns ErrClosed; it closes l. It returns l's error if
// accepting fails otherwise. Serve may be called on several listeners.
func (p *Proxy) Serve(l net.Listener) error {
	ctx, err := p.start()
	if err != nil {
		l.Close()
		return err
	}
	defer p.wg.Done()
	defer context.AfterFunc(ctx, func() { l.Close() })()
	defer l.Close()
	slots := make(chan struct{}, maxConns)
	for {
		slots <- struct{}{}
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ErrClosed
			}
			return fmt.Errorf("network proxy: accept: %w", err)
		}
		p.wg.Go(func() {
			defer func() { <-slots }()
			if ev, asked := p.serveConn(ctx, c); asked {
				ev.Duration = time.Since(ev.Time)
				p.record(ev)
			}
		})
	}
}

// start counts a Serve call in p.wg, so that Close waits for it.
func (p *Proxy) start() (context.Context, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.ctx == nil {
		p.ctx, p.cancel = context.WithCancel(context.Background())
	}
	p.wg.Add(1)
	return p.ctx, nil
}

// Close stops every Serve, closes every connection, and returns once each
// one's event is recorded. Calling it again does nothing.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	if p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// Summary returns the record so far: complete once Close has returned.
func (p *Proxy) Summary() Summary {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.summary
	s.Events = append([]Event(nil), s.Events...)
	return s
}

func (p *Proxy) record(ev Event) {
	max := p.MaxEvents
	if max == 0 {
		max = DefaultMaxEvents
	}
	p.mu.Lock()
	p.summary.add(ev, max)
	p.mu.Unlock()
	if !ev.Allowed && p.OnRefused != nil {
		p.OnRefused(ev)
	}
}

// serveConn serves one request on c and returns its event, or false for a
// connection that closed or stayed silent before its first byte: it asked
// for nothing.
func (p *Proxy) serveConn(ctx context.Context, c net.Conn) (Event, bool) {
	defer context.AfterFunc(ctx, func() { c.Close() })()
	defer c.Close()
	ev := Event{Time: time.Now()}
	limit := &io.LimitedReader{R: c, N: maxHeaderBytes}
	br := bufio.NewReader(limit)
	c.SetReadDeadline(time.Now().Add(headerTimeout))
	req, t, err := readRequest(br)
	if err != nil && limit.N == maxHeaderBytes {
		return ev, false
	}
	if err != nil {
		if limit.N == 0 {
			err = fmt.Errorf("request header larger than %d bytes", maxHeaderBytes)
		}
		if req != nil {
			ev.Dest = bounded(req.RequestURI)
		}
		ev.Reason, ev.Detail = ReasonBadRequest, bounded(err.Error())
		reply(c, http.StatusBadRequest, "git-lease network proxy: bad request: "+ev.Detail)
		return ev, true
	}
	c.SetReadDeadline(time.Time{})
	limit.N = math.MaxInt64
	ev.Dest = t.String()
	up, status := p.open(ctx, t, &ev)
	if up == nil {
		reply(c, status, "git-lease network proxy: "+ev.Dest+": "+ev.Detail)
		return ev, true
	}
	defer context.AfterFunc(ctx, func() { up.Close() })()
	cu := &countConn{Conn: up}
	if req.Method == http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		splice(c, br, cu)
	} else {
		forwardHTTP(c, req, cu, &ev)
	}
	ev.BytesUp, ev.BytesDown = cu.up, cu.down
	return ev, true
}

// reply answers a request the proxy does not forward, and ends the
// connection.
func reply(w io.Writer, status int, msg string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		status, http.StatusText(status), len(msg)+1, msg)
}
