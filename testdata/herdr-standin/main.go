// Command herdr-standin stands in for a Herdr server (socket protocol 20,
// Herdr 0.8.2, as read from herdrdev/herdr at commit 1c76079f) in
// git-lease's tests, where Herdr cannot be installed. It speaks Herdr's
// framing and error shape and the methods git-lease calls, with Herdr's
// result shapes, and runs pane commands as real processes.
//
//	herdr-standin [-socket PATH] [-log FILE] [-protocol N] [-version V] [-live-handoff=B] [-events=B]
//	herdr-standin -call METHOD [-socket PATH]
//
//	-socket        Unix socket to listen on (default $HERDR_SOCKET_PATH)
//	-log           append the method name of every request to FILE, one a line
//	-protocol      the protocol ping reports (default 20). In Herdr it is the
//	               terminal client/server wire version, bumped often; the JSON
//	               API does not change with it
//	-version       the version ping reports (default 0.8.2)
//	-live-handoff  ping's capabilities.live_handoff (default true, as Herdr on
//	               Unix)
//	-events        answer events.subscribe (default true, as Herdr does);
//	               false answers it as an unknown method
//	-call          be a client instead: send METHOD (such as standin.restart)
//	               with no parameters to the server at -socket, print its
//	               answer and exit, 1 on an error answer (for scripts)
//
// Framing, as Herdr: one request per connection, one JSON line of at most
// 1 MiB that must arrive within 5 s, answered by one line with the same id:
// {"id","result":{"type",…}} or {"id","error":{"code","message"}}. A line
// that is not a request, or names an unknown method, is answered with code
// invalid_request and an empty id.
//
// Methods: ping, workspace.create, workspace.list, pane.split, layout.apply
// (one pane, no splits), pane.get, pane.list, pane.read, pane.send_input,
// pane.send_text, pane.send_keys (keys enter and ctrl+c only),
// pane.report_agent, pane.release_agent, agent.wait, pane.close, and
// events.subscribe for pane.exited, pane.closed and pane.agent_status_changed
// (events.go says how it streams). A pane
// made by layout.apply runs its argv; a shell pane (workspace.create,
// pane.split) runs each line typed into it with `sh -c`, in the pane's cwd
// with the pane's env. As in Herdr, a pane whose argv process exits is
// removed, the last pane closing a tab closes it, and the last tab closing
// a workspace closes that; an agent's status is done when it was reported
// idle after working or blocked (no pane is ever looked at here). No
// workspace is active: layout.apply needs a workspace_id or tab_id.
//
// It implements one focus method, pane.focus (git lease attach), and
// refuses every other: any method whose name contains "focus", and any
// request with "focus": true, is refused with code
// standin_refused (and logged like every request).
//
// pane.report_agent takes Herdr's optional seq: a report whose seq is not
// above the last one seen from the same source on that pane is ignored
// (answered ok, as Herdr does).
//
// Control methods, on the same socket:
//
//	standin.set {"drop":N,"delay_ms":D}  apply the Nth request after this
//	    one and then close its connection without an answer (0: never);
//	    delay every later answer by D milliseconds.
//	standin.restart {}  behave like a restarted Herdr: panes keep their IDs
//	    and labels but get new terminal IDs; their processes are killed and
//	    their output and agent state are lost; argv panes come back as shells.
//	standin.handoff {}  behave like a live handoff (herdr update --handoff):
//	    panes keep their IDs, labels, processes, output and agent state, but
//	    each gets a new terminal ID.
//
// SIGTERM or SIGINT kills every pane process and removes the socket.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const (
	maxRequest     = 1 << 20
	requestTimeout = 5 * time.Second
)

func main() {
	socket := flag.String("socket", os.Getenv("HERDR_SOCKET_PATH"), "Unix socket to listen on")
	logPath := flag.String("log", "", "append every request's method name to this file")
	protocol := flag.Int("protocol", 20, "protocol number ping reports")
	version := flag.String("version", "0.8.2", "version ping reports")
	handoff := flag.Bool("live-handoff", true, "ping's capabilities.live_handoff")
	events := flag.Bool("events", true, "answer events.subscribe")
	call := flag.String("call", "", "send this method to the server at -socket and print its answer")
	flag.Parse()
	if *socket == "" {
		fatal(fmt.Errorf("no socket: pass -socket or set HERDR_SOCKET_PATH"))
	}
	if *call != "" {
		callServer(*socket, *call)
		return
	}
	s := newServer(*socket, *protocol)
	s.version, s.liveHandoff, s.events = *version, *handoff, *events
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fatal(err)
		}
		s.log = f
	}
	os.Remove(*socket)
	ln, err := net.Listen("unix", *socket)
	if err != nil {
		fatal(err)
	}
	if err := os.Chmod(*socket, 0o600); err != nil {
		fatal(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		s.shutdown()
		ln.Close()
		os.Remove(*socket)
		os.Exit(0)
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go s.serve(conn)
	}
}

// callServer sends method to the server at socket, prints its answer and
// exits 1 when the answer is an error.
func callServer(socket, method string) {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, `{"id":"call","method":%q,"params":{}}`+"\n", method)
	answer, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		fatal(err)
	}
	fmt.Print(answer)
	if strings.Contains(answer, `"error"`) {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "herdr-standin:", err)
	os.Exit(1)
}

type request struct {
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// apiError is an error answer.
type apiError struct{ code, message string }

func failure(code, format string, args ...any) *apiError {
	return &apiError{code, fmt.Sprintf(format, args...)}
}

// invalid is how Herdr answers a request it cannot parse.
func invalid(format string, args ...any) *apiError {
	return failure("invalid_request", "invalid request: "+format, args...)
}

type result = map[string]any

type handler func(s *server, ctx context.Context, params json.RawMessage) (result, *apiError)

var handlers = map[string]handler{
	"ping":               (*server).ping,
	"workspace.create":   (*server).workspaceCreate,
	"workspace.list":     (*server).workspaceList,
	"pane.split":         (*server).paneSplit,
	"layout.apply":       (*server).layoutApply,
	"pane.get":           (*server).paneGet,
	"pane.list":          (*server).paneList,
	"pane.read":          (*server).paneRead,
	"pane.send_input":    (*server).paneSendInput,
	"pane.send_text":     (*server).paneSendInput,
	"pane.send_keys":     (*server).paneSendInput,
	"pane.report_agent":  (*server).reportAgent,
	"pane.release_agent": (*server).releaseAgent,
	"agent.wait":         (*server).agentWait,
	"pane.close":         (*server).paneClose,
	"standin.set":        (*server).set,
	"standin.restart":    (*server).restart,
	"standin.handoff":    (*server).handoff,
}

// serve answers the one request of a connection.
func (s *server) serve(conn net.Conn) {
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(requestTimeout))
	line, err := bufio.NewReader(io.LimitReader(conn, maxRequest+1)).ReadBytes('\n')
	if err != nil {
		return // too long, too slow, or the client hung up: Herdr drops these too
	}
	conn.SetReadDeadline(time.Time{})
	var req request
	if err := json.Unmarshal(line, &req); err != nil || req.Method == "" {
		conn.Write(answer("", nil, invalid("not a request line")))
		return
	}
	s.record(req.Method)
	drop, delay := s.knobs(req.Method)

	// Like Herdr, stop a wait when the client hangs up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		conn.Read(make([]byte, 1))
		cancel()
	}()

	if req.Method == "events.subscribe" && s.events && !drop {
		s.subscribe(ctx, conn, req)
		return
	}
	res, apiErr := s.handle(ctx, req)
	if drop {
		return
	}
	time.Sleep(delay)
	id := req.ID
	if apiErr != nil && apiErr.code == "invalid_request" {
		id = ""
	}
	conn.Write(answer(id, res, apiErr))
}

func (s *server) handle(ctx context.Context, req request) (result, *apiError) {
	if req.Method == "pane.focus" {
		// The one focus method git-lease may call: git lease attach, on the
		// user's request. Logged like every request, so tests can tell.
		return s.paneFocus(ctx, req.Params)
	}
	if strings.Contains(req.Method, "focus") {
		return nil, failure("standin_refused", "the stand-in never implements focus methods (%s): git-lease must not move the user's focus", req.Method)
	}
	var focus struct {
		Focus bool `json:"focus"`
	}
	if json.Unmarshal(req.Params, &focus) == nil && focus.Focus {
		return nil, failure("standin_refused", "%s with focus:true would move the user's focus: send focus:false", req.Method)
	}
	h, ok := handlers[req.Method]
	if !ok {
		return nil, invalid("unknown variant `%s`", req.Method)
	}
	return h(s, ctx, req.Params)
}

func answer(id string, res result, apiErr *apiError) []byte {
	var v any = map[string]any{"id": id, "result": res}
	if apiErr != nil {
		v = map[string]any{"id": id, "error": map[string]string{"code": apiErr.code, "message": apiErr.message}}
	}
	line, err := json.Marshal(v)
	if err != nil {
		line = []byte(`{"id":"","error":{"code":"internal_error","message":"failed to encode response"}}`)
	}
	return append(line, '\n')
}

// decode reads a request's params into v.
func decode(params json.RawMessage, v any) *apiError {
	if len(params) == 0 {
		params = []byte("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return invalid("%v", err)
	}
	return nil
}

// record appends a method name to the request log.
func (s *server) record(method string) {
	if s.log == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintln(s.log, method)
}

// knobs counts a request towards the drop knob and returns what to do with
// its answer. Control methods are neither dropped nor delayed nor counted.
func (s *server) knobs(method string) (drop bool, delay time.Duration) {
	if strings.HasPrefix(method, "standin.") {
		return false, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropIn > 0 {
		s.dropIn--
		drop = s.dropIn == 0
	}
	return drop, s.delay
}

func (s *server) set(_ context.Context, params json.RawMessage) (result, *apiError) {
	var p struct {
		Drop    int `json:"drop"`
		DelayMS int `json:"delay_ms"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropIn = p.Drop
	s.delay = time.Duration(p.DelayMS) * time.Millisecond
	return result{"type": "ok"}, nil
}

func (s *server) ping(context.Context, json.RawMessage) (result, *apiError) {
	return result{
		"type":         "pong",
		"version":      s.version,
		"protocol":     s.protocol,
		"capabilities": map[string]bool{"live_handoff": s.liveHandoff, "detached_server_daemon": false},
	}, nil
}
