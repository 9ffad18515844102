package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// run is a pane's running process, in its own process group.
type run struct {
	cmd   *exec.Cmd
	stdin *os.File
}

// start runs argv in p with p's cwd and env plus the variables Herdr sets
// in every pane. Called with s.mu held.
func (s *server) start(p *pane, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.cwd
	cmd.Env = os.Environ()
	for k, v := range p.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env,
		"HERDR_SOCKET_PATH="+s.socket,
		"HERDR_ENV=1",
		"HERDR_WORKSPACE_ID="+p.tab.ws.id,
		"HERDR_TAB_ID="+p.tab.id,
		"HERDR_PANE_ID="+p.id,
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.WaitDelay = time.Second
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdin = stdinR
	err = cmd.Start()
	stdinR.Close()
	if err != nil {
		stdin.Close()
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	r := &run{cmd: cmd, stdin: stdin}
	p.run = r
	go func() {
		cmd.Wait()
		s.exited(p, r)
	}()
	return nil
}

// exited notes that r ended by itself. As in Herdr, a pane whose argv
// process exits is removed; a shell pane stays.
func (s *server) exited(p *pane, r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.run != r {
		return // stopped on purpose (close, restart, shutdown)
	}
	p.run = nil
	if p.argv != nil && s.panes[p.id] == p {
		s.emitPane("pane.exited", p)
		s.remove(p)
	}
}

// stop kills p's process group, if any. Called with s.mu held.
func (p *pane) stop() {
	r := p.run
	if r == nil {
		return
	}
	p.run = nil
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.stdin.Close()
}

// key names a key the stand-in can press, or returns "".
func key(k string) string {
	switch strings.ToLower(strings.TrimSpace(k)) {
	case "enter", "return":
		return "enter"
	case "ctrl+c", "control+c", "c-c":
		return "ctrl+c"
	}
	return ""
}

// press presses a key in p. Enter hands the typed line to the running
// process, or, in a shell pane with nothing running, runs it with sh -c.
// Called with s.mu held.
func (s *server) press(p *pane, k string) error {
	line := p.typed
	p.typed = ""
	switch {
	case k == "ctrl+c" && p.run != nil:
		syscall.Kill(-p.run.cmd.Process.Pid, syscall.SIGINT)
	case k == "ctrl+c":
	case p.run != nil:
		// Like a terminal, input to a process that does not read it is lost;
		// the deadline keeps a full pipe from blocking the server.
		p.run.stdin.SetWriteDeadline(time.Now().Add(time.Second))
		io.WriteString(p.run.stdin, line+"\n")
	case p.argv == nil && strings.TrimSpace(line) != "":
		return s.start(p, []string{"sh", "-c", line})
	}
	return nil
}

// keepOutput bounds the output a pane keeps.
const keepOutput = 1 << 20

// output is a pane's merged stdout and stderr.
type output struct {
	mu  sync.Mutex
	buf []byte
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, b...)
	if len(o.buf) > keepOutput {
		o.buf = o.buf[len(o.buf)-keepOutput:]
	}
	return len(b), nil
}

// tail returns the last n lines and whether earlier lines were left out.
func (o *output) tail(n int) (string, bool) {
	o.mu.Lock()
	text := strings.TrimSuffix(strings.ReplaceAll(string(o.buf), "\r", ""), "\n")
	o.mu.Unlock()
	if text == "" {
		return "", false
	}
	lines := strings.Split(text, "\n")
	if len(lines) <= n {
		return text, false
	}
	return strings.Join(lines[len(lines)-n:], "\n"), true
}
