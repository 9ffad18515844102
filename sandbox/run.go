package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
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

// process runs cmd in its own process group and enforces the bounds that
// need watching from outside: wall time, output bytes, and any extra
// watcher (disk). It kills the whole group when a bound is hit.
type process struct {
	cmd     *exec.Cmd
	limits  Limits
	output  io.Writer
	watch   func() string // returns a bound name when one is exceeded
	onStart func(pid int) error

	mu    sync.Mutex
	bound string
}

func (p *process) hit(bound string) {
	p.mu.Lock()
	if p.bound == "" {
		p.bound = bound
	}
	p.mu.Unlock()
	p.kill()
}

func (p *process) kill() {
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cmd.Process.Kill()
	}
}

// run starts the process, waits for it and reports how it ended.
func (p *process) run(ctx context.Context) (Exit, error) {
	if p.cmd.SysProcAttr == nil {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	p.cmd.SysProcAttr.Setpgid = !p.cmd.SysProcAttr.Setsid
	out := &limitWriter{w: p.output, limit: p.limits.OutputBytes, over: func() { p.hit(BoundOutput) }}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	var exit Exit
	if err := p.cmd.Start(); err != nil {
		return exit, fmt.Errorf("start %s: %w", p.cmd.Args[0], err)
	}
	if p.onStart != nil {
		if err := p.onStart(p.cmd.Process.Pid); err != nil {
			p.kill()
			p.cmd.Wait()
			return exit, err
		}
	}
	done := make(chan struct{})
	go func() {
		var wall <-chan time.Time
		if p.limits.Wall > 0 {
			t := time.NewTimer(p.limits.Wall)
			defer t.Stop()
			wall = t.C
		}
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				p.kill()
				return
			case <-wall:
				p.hit(BoundWall)
				return
			case <-tick.C:
				if p.watch != nil {
					if b := p.watch(); b != "" {
						p.hit(b)
						return
					}
				}
			}
		}
	}()
	err := p.cmd.Wait()
	close(done)
	p.mu.Lock()
	exit.Bound = p.bound
	p.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		exit.Code = ws.ExitStatus()
		if ws.Signaled() {
			exit.Signal = ws.Signal().String()
			exit.Code = 128 + int(ws.Signal())
			if ws.Signal() == syscall.SIGXCPU && exit.Bound == "" {
				exit.Bound = BoundCPU
			}
			if ws.Signal() == syscall.SIGXFSZ && exit.Bound == "" {
				exit.Bound = BoundDisk
			}
		}
	default:
		return exit, err
	}
	if ctx.Err() != nil && exit.Bound == "" {
		return exit, ctx.Err()
	}
	return exit, nil
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

// RunProcess runs an unsandboxed command in its own process group under the
// wall-time and output bounds of limits.
func RunProcess(ctx context.Context, cmd *exec.Cmd, limits Limits, output io.Writer) (Exit, error) {
	p := &process{cmd: cmd, limits: limits, output: output}
	return p.run(ctx)
}
