package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// Bounds a run can hit, as named in Exit.Bound and in lease records.
const (
	BoundWall      = "wall"
	BoundMemory    = "memory"
	BoundCPU       = "cpu"
	BoundProcesses = "processes"
	BoundDisk      = "disk"
	BoundOutput    = "output"
)

// Proc is a Process backed by one host process (and its process group),
// with the bounds that are watched from outside: wall time, output bytes,
// and whatever Watch reports. Providers build one with NewProc.
type Proc struct {
	ctx    context.Context
	cmd    *exec.Cmd
	limits Limits
	out    *switchWriter
	// Watch, polled while the agent runs, names a bound that is exceeded.
	Watch func() string
	// Finish, called after the process ended, may refine the exit (for
	// example with the bound a cgroup saw) and release resources. state
	// is nil when the process could not be waited for.
	Finish func(exit *Exit, state *os.ProcessState)
	// Gate releases a process that was started held at a gate; when nil,
	// Release starts the command itself.
	Gate func() error
	// Interrupter sends the agent SIGINT; when nil, the whole process
	// group gets it.
	Interrupter func() error
	enforcement string
	input       io.WriteCloser // the agent's standard input: a pipe or a pty
	inputPeer   *os.File       // the end the child gets; closed once it has it
	output      *os.File       // the pty's master, or GiveStdio's pipe's end, read for output
	outputPeer  *os.File       // GiveStdio's output pipe's end that the child gets
	copied      chan struct{}  // closed when output has been copied to its end

	mu      sync.Mutex
	bound   string
	running bool
	done    chan struct{}
	exit    Exit
	err     error
}

// NewProc prepares cmd to run in its own process group (or session, when
// the caller set Setsid) with its output bounded by limits.OutputBytes and
// its standard input a pipe, or a pseudo-terminal of its own when
// agent.TTY. Output before Release is held back (see Early); after it, it
// goes to agent.Output.
func NewProc(ctx context.Context, cmd *exec.Cmd, limits Limits, agent Command, enforcement string) (*Proc, error) {
	p := &Proc{ctx: ctx, cmd: cmd, limits: limits, enforcement: enforcement, done: make(chan struct{})}
	p.out = &switchWriter{final: &limitWriter{w: agent.Output, limit: limits.OutputBytes, over: func() { p.hit(BoundOutput) }}}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = !cmd.SysProcAttr.Setsid
	if agent.TTY {
		master, slave, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("open a terminal for the agent: %w", err)
		}
		p.output, p.input, p.inputPeer = master, master, slave
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		return p, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.input, p.inputPeer = w, r
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, p.out, p.out
	return p, nil
}

// GiveStdio makes the agent's standard input, output and error (its pipes
// or its terminal) owned by uid and gid, for an agent that runs as another host
// uid than git-lease: programs reopen them by path (/dev/stdin,
// /dev/stderr), which the kernel checks against the owner.
func (p *Proc) GiveStdio(uid, gid int) error {
	if p.output == nil {
		// An output pipe of its own, to give away (exec.Cmd would make
		// one only at Start).
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		p.output, p.outputPeer = r, w
		p.cmd.Stdout, p.cmd.Stderr = w, w
	}
	for _, f := range []*os.File{p.inputPeer, p.outputPeer} {
		if f != nil {
			if err := f.Chown(uid, gid); err != nil {
				return fmt.Errorf("give the agent its standard streams: %w", err)
			}
		}
	}
	return nil
}

// Input is the agent's standard input.
func (p *Proc) Input() io.WriteCloser { return p.input }

// Interrupt sends the agent SIGINT.
func (p *Proc) Interrupt() error {
	if p.Interrupter != nil {
		return p.Interrupter()
	}
	if p.cmd.Process == nil {
		return errors.New("the agent has not started")
	}
	return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
}

// started is called once the child runs: the parent's copy of the child's
// input end is closed, and a terminal's output is copied out.
func (p *Proc) started() {
	p.inputPeer.Close()
	if p.outputPeer != nil {
		p.outputPeer.Close()
		p.copied = make(chan struct{})
		go func() {
			io.Copy(p.out, p.output)
			p.output.Close()
			close(p.copied)
		}()
		return
	}
	if p.output != nil {
		go io.Copy(p.out, p.output) // a terminal
	}
}

// StartHeld starts the command before Release, for providers whose command
// waits at its own gate. It returns once the process runs.
func (p *Proc) StartHeld() error {
	if err := p.cmd.Start(); err != nil {
		return err
	}
	p.running = true
	p.started()
	go p.wait()
	return nil
}

// Early is what the process printed before Release (setup diagnostics).
func (p *Proc) Early() string { return p.out.early() }

// Exited is closed when the process has ended.
func (p *Proc) Exited() <-chan struct{} { return p.done }

// Enforcement says how the bounds are enforced.
func (p *Proc) Enforcement() string { return p.enforcement }

// Release lets the agent run and starts the outside watch.
func (p *Proc) Release() error {
	p.out.release()
	if !p.running {
		if err := p.cmd.Start(); err != nil {
			p.err = fmt.Errorf("start %s: %w", p.cmd.Args[0], err)
			close(p.done)
			return p.err
		}
		p.running = true
		p.started()
		go p.wait()
	} else if p.Gate != nil {
		if err := p.Gate(); err != nil {
			p.Kill()
			return err
		}
	}
	go p.watch()
	return nil
}

// Wait waits for the process and reports how it ended.
func (p *Proc) Wait() (Exit, error) {
	<-p.done
	return p.exit, p.err
}

// Kill stops the whole process group now.
func (p *Proc) Kill() {
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cmd.Process.Kill()
	}
}

func (p *Proc) hit(bound string) {
	p.mu.Lock()
	if p.bound == "" {
		p.bound = bound
	}
	p.mu.Unlock()
	p.Kill()
}

func (p *Proc) watch() {
	var wall <-chan time.Time
	if p.limits.Wall > 0 {
		t := time.NewTimer(p.limits.Wall)
		defer t.Stop()
		wall = t.C
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-p.ctx.Done():
			p.Kill()
			return
		case <-wall:
			p.hit(BoundWall)
			return
		case <-tick.C:
			if p.Watch != nil {
				if b := p.Watch(); b != "" {
					p.hit(b)
					return
				}
			}
		}
	}
}

func (p *Proc) wait() {
	err := p.cmd.Wait()
	if p.copied != nil {
		<-p.copied // everything the agent printed, before its end is recorded
	}
	exit := Exit{}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		exit.Code = ws.ExitStatus()
		if ws.Signaled() {
			exit.Signal = ws.Signal().String()
			exit.Code = 128 + int(ws.Signal())
		}
	default:
		p.err = err
	}
	p.mu.Lock()
	exit.Bound = p.bound
	p.mu.Unlock()
	if p.Finish != nil {
		p.Finish(&exit, p.cmd.ProcessState)
	}
	p.input.Close()
	if p.ctx.Err() != nil && exit.Bound == "" && p.err == nil {
		p.err = p.ctx.Err()
	}
	p.exit = exit
	close(p.done)
}

// switchWriter holds output back until release, then passes it on.
type switchWriter struct {
	mu       sync.Mutex
	held     []byte
	released bool
	final    io.Writer
}

func (s *switchWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released {
		if len(s.held) < 64<<10 {
			s.held = append(s.held, b...)
		}
		return len(b), nil
	}
	return s.final.Write(b)
}

func (s *switchWriter) release() {
	s.mu.Lock()
	s.released = true
	s.mu.Unlock()
}

func (s *switchWriter) early() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.held)
}

// limitWriter passes at most limit bytes (0: no limit) and calls over once
// when more arrive.
type limitWriter struct {
	mu      sync.Mutex
	w       io.Writer
	limit   int64
	written int64
	over    func()
	tripped bool
}

func (l *limitWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(b)
	if l.limit > 0 && l.written+int64(len(b)) > l.limit {
		b = b[:max(0, l.limit-l.written)]
		if !l.tripped {
			l.tripped = true
			go l.over()
		}
	}
	l.written += int64(len(b))
	if len(b) > 0 && l.w != nil {
		l.w.Write(b)
	}
	return n, nil
}
