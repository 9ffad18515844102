// Package herdr is git-lease's client for Herdr's local socket API
// (github.com/herdrdev/herdr, written against Herdr 0.8.2 at commit
// 1c76079f, and accepting any later version). Herdr supervises
// an agent: git-lease opens a pane without stealing focus, runs its own
// in-pane runner there, reports the agent's state, reads Herdr's view and
// closes the pane at cleanup.
//
// Every request is one JSON line on a fresh connection, answered by one
// line. Every call has a deadline. The client never calls a focus method
// and always sends focus:false when it creates a pane: focusing a pane
// would take the user's attention and turn a pane's done state into idle.
package herdr

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// MinVersion is the Herdr version this client was written against; Ping
// accepts it and any later one. Herdr's ping also reports a protocol
// number, but that is the wire version between Herdr's own terminal client
// and server (bumped with most releases), not the JSON API this client
// speaks: the client never checks it. What it checks instead is that each
// answer has the result type it expects.
const MinVersion = "0.8.2"

// DefaultTimeout bounds one call when the client sets no Timeout and the
// caller's context has no earlier deadline.
const DefaultTimeout = 5 * time.Second

const (
	maxRequest  = 1 << 20  // herdr drops a request line longer than 1 MiB
	maxResponse = 32 << 20 // far above any answer git-lease asks for
)

var (
	// ErrUnreachable means no server answered on the socket.
	ErrUnreachable = errors.New("herdr is not reachable")
	// ErrNoAnswer means the server closed the connection before answering:
	// a request that changes something may or may not have been applied.
	ErrNoAnswer = errors.New("herdr closed the connection without answering")
	// ErrVersion means the server is older than MinVersion, or gives no
	// version this client can read.
	ErrVersion = errors.New("unsupported herdr version")
	// ErrFocus refuses a focus method: git-lease never moves the user's focus.
	ErrFocus = errors.New("git-lease never calls herdr focus methods")
)

// Error is an error answered by Herdr, with its code and message.
type Error struct {
	Method  string
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("herdr %s: %s (%s)", e.Method, e.Message, e.Code)
}

// Is matches an Error sentinel with the same code, so that
// errors.Is(err, ErrPaneNotFound) holds for any method.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Method == "" && t.Code == e.Code
}

// Herdr error codes that git-lease acts on.
var (
	ErrPaneNotFound    = &Error{Code: "pane_not_found", Message: "pane not found"}
	ErrAgentNotFound   = &Error{Code: "agent_not_found", Message: "no agent reported in the pane"}
	ErrAgentNotRunning = &Error{Code: "agent_not_running", Message: "agent is no longer running in the pane"}
	ErrWaitTimeout     = &Error{Code: "timeout", Message: "timed out waiting for agent status"}
)

// Client talks to one Herdr server. The zero Timeout means DefaultTimeout.
// A Client holds no connection and is safe for concurrent use.
type Client struct {
	// Socket is the server's socket path, usually from Locate.
	Socket string
	// Timeout bounds each call (agent waits get it on top of their own
	// timeout).
	Timeout time.Duration
}

// method describes one Herdr method this client calls: the result type
// Herdr answers with, and whether a request whose answer was lost is sent
// once more (only for reads, which change nothing).
type method struct {
	result string
	reread bool
}

// methods is every method the client calls. The one focus method is
// reachable only through Attach.
var methods = map[string]method{
	"ping":               {result: "pong", reread: true},
	"workspace.create":   {result: "workspace_created"},
	"workspace.list":     {result: "workspace_list", reread: true},
	"pane.split":         {result: "pane_info"},
	"layout.apply":       {result: "layout_apply"},
	"pane.get":           {result: "pane_info", reread: true},
	"pane.list":          {result: "pane_list", reread: true},
	"pane.read":          {result: "pane_read", reread: true},
	"pane.send_input":    {result: "ok"},
	"pane.send_keys":     {result: "ok"},
	"pane.report_agent":  {result: "ok"},
	"pane.release_agent": {result: "ok"},
	"agent.wait":         {result: "agent_info", reread: true},
	"pane.close":         {result: "ok"},
	"pane.focus":         {result: "ok"}, // only through Attach
	"events.subscribe":   {result: "subscription_started"},
}

// noFocus is the focus parameter of every create: it can only say false.
type noFocus struct{}

func (noFocus) MarshalJSON() ([]byte, error) { return []byte("false"), nil }

var requestSeq atomic.Uint64

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// call sends one request with the client's timeout and decodes the result
// into out.
func (c *Client) call(ctx context.Context, name string, params, out any) error {
	return c.callWithin(ctx, c.timeout(), name, params, out)
}

// callWithin is call with an explicit time budget. A read whose answer was
// lost is sent once more; nothing else is.
func (c *Client) callWithin(ctx context.Context, budget time.Duration, name string, params, out any) error {
	if strings.Contains(name, "focus") {
		return fmt.Errorf("herdr %s: %w", name, ErrFocus)
	}
	return c.send(ctx, budget, name, params, out)
}

// Attach brings a pane forward (pane.focus). It is the one focus call the
// client makes, and only git lease attach, run by the user, calls it.
func (c *Client) Attach(ctx context.Context, paneID string) error {
	return c.send(ctx, c.timeout(), "pane.focus", map[string]string{"pane_id": paneID}, nil)
}

// send is callWithin without the focus guard.
func (c *Client) send(ctx context.Context, budget time.Duration, name string, params, out any) error {
	m, ok := methods[name]
	if !ok {
		return fmt.Errorf("herdr %s: not a method git-lease calls", name)
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	err := c.roundTrip(ctx, name, m.result, params, out)
	if m.reread && errors.Is(err, ErrNoAnswer) {
		err = c.roundTrip(ctx, name, m.result, params, out)
	}
	return err
}

// roundTrip writes one request line on a new connection and reads one
// answer line.
func (c *Client) roundTrip(ctx context.Context, name, result string, params, out any) error {
	conn, err := c.open(ctx, name, result, params, out)
	if conn != nil {
		conn.Close()
	}
	return err
}

// open writes one request line on a new connection and reads and decodes
// the first answer line. Only ctx bounds the I/O. The connection is
// returned open when the answer was read, for a caller that reads on (an
// event stream); close it. A server may send at most maxResponse bytes in
// all on it.
func (c *Client) open(ctx context.Context, name, result string, params, out any) (*stream, error) {
	if c.Socket == "" {
		return nil, fmt.Errorf("herdr %s: no socket: use herdr.Locate to find it", name)
	}
	id := fmt.Sprintf("git-lease:%d", requestSeq.Add(1))
	line, err := json.Marshal(struct {
		ID     string `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params"`
	}{id, name, params})
	if err != nil {
		return nil, fmt.Errorf("herdr %s: encode request: %w", name, err)
	}
	if len(line)+1 > maxRequest {
		return nil, fmt.Errorf("herdr %s: request is %d bytes; herdr accepts at most 1 MiB: send less", name, len(line)+1)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		if expired(ctx, err) {
			return nil, c.late(ctx, name)
		}
		return nil, fmt.Errorf("%w at %s: is herdr running? start it, or point %s at its socket (%v)", ErrUnreachable, c.Socket, EnvSocketPath, err)
	}
	// Only ctx ends the I/O, so that an I/O error tells a lost answer from a
	// late one.
	s := &stream{conn: conn, lines: bufio.NewReader(io.LimitReader(conn, maxResponse))}
	s.stop = context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	if _, err := conn.Write(append(line, '\n')); err != nil {
		s.Close()
		return nil, c.lost(ctx, name, err)
	}
	answer, err := s.lines.ReadBytes('\n')
	if err != nil {
		s.Close()
		return nil, c.lost(ctx, name, err)
	}
	return s, decode(name, id, result, answer, out)
}

// stream is a connection that open answered on.
type stream struct {
	conn  net.Conn
	lines *bufio.Reader
	stop  func() bool
}

func (s *stream) Close() error {
	s.stop()
	return s.conn.Close()
}

// lost explains an I/O failure after the connection was open.
func (c *Client) lost(ctx context.Context, name string, err error) error {
	if expired(ctx, err) {
		return c.late(ctx, name)
	}
	return fmt.Errorf("herdr %s at %s: %w (%v)", name, c.Socket, ErrNoAnswer, err)
}

// expired reports whether err comes from ctx ending.
func expired(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded)
}

func (c *Client) late(ctx context.Context, name string) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, context.Canceled) {
		return fmt.Errorf("herdr %s: %w", name, cause)
	}
	if cause == nil { // the dialer saw ctx's deadline an instant before ctx did
		cause = context.DeadlineExceeded
	}
	return fmt.Errorf("herdr %s at %s did not answer in time: is herdr hung or overloaded? (%w)", name, c.Socket, cause)
}

// decode checks an answer line and unpacks its result into out.
func decode(name, id, result string, answer []byte, out any) error {
	var reply struct {
		ID     string          `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(answer, &reply); err != nil {
		return fmt.Errorf("herdr %s: unreadable answer: %w", name, err)
	}
	if reply.Error != nil {
		return &Error{Method: name, Code: reply.Error.Code, Message: reply.Error.Message}
	}
	if reply.ID != id {
		return fmt.Errorf("herdr %s: answer is for request %q, not %q", name, reply.ID, id)
	}
	var kind struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(reply.Result, &kind); err != nil || kind.Type != result {
		return fmt.Errorf("herdr %s: answered a %q result, want %q: is the server herdr %s or later?", name, kind.Type, result, MinVersion)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Result, out); err != nil {
		return fmt.Errorf("herdr %s: unreadable %s result: %w", name, result, err)
	}
	return nil
}

// Server is what Ping learns about the server.
type Server struct {
	Version      string       `json:"version"`
	Protocol     int          `json:"protocol"`
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities are the optional server features Ping reports; a server
// that reports none leaves both false.
type Capabilities struct {
	LiveHandoff          bool `json:"live_handoff"`
	DetachedServerDaemon bool `json:"detached_server_daemon"`
}

// Ping checks that a server answers on the socket with a pong and that its
// version is at least MinVersion. It fails with ErrUnreachable when nothing
// listens and ErrVersion (with the server's answer) when the server is
// older or names no readable version. The protocol number is reported, not
// checked. Ping changes nothing and is retried once if the connection
// drops.
func (c *Client) Ping(ctx context.Context) (Server, error) {
	var s Server
	if err := c.call(ctx, "ping", struct{}{}, &s); err != nil {
		return Server{}, err
	}
	v, ok := sandbox.ParseVersion(s.Version)
	if !ok {
		return s, fmt.Errorf("%w: herdr at %s reports version %q, which git-lease cannot read: it needs herdr %s or later", ErrVersion, c.Socket, s.Version, MinVersion)
	}
	if min, _ := sandbox.ParseVersion(MinVersion); v.Less(min) {
		return s, fmt.Errorf("%w: herdr %s at %s is older than %s, the version git-lease was written against: update herdr", ErrVersion, s.Version, c.Socket, MinVersion)
	}
	return s, nil
}
