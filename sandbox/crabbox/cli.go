package crabbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// Bounds on what is kept of a crabbox invocation's output.
const (
	maxStdout = 16 << 20
	maxStderr = 256 << 10
)

// call is one finished crabbox invocation.
type call struct {
	args   []string
	code   int
	stdout []byte
	stderr string // its tail
}

// message is crabbox's own last word: the last non-empty line on stderr.
func (c call) message() string {
	lines := strings.Split(strings.TrimSpace(c.stderr), "\n")
	if m := strings.TrimSpace(lines[len(lines)-1]); m != "" {
		return m
	}
	return "no message"
}

// err describes a failed invocation. Exit 3 is Crabbox's auth failure:
// the provider cannot be used until credentials are given.
func (c call) err() error {
	if c.code == 3 {
		return fmt.Errorf("%w: crabbox is not logged in (%s); git-lease gives crabbox its own config file, so a token stored by `crabbox login` is not read: give the broker credentials in the environment (CRABBOX_COORDINATOR and CRABBOX_COORDINATOR_TOKEN) or the provider's own credentials", sandbox.ErrUnavailable, c.message())
	}
	verb := ""
	if len(c.args) > 0 {
		verb = c.args[0]
	}
	return fmt.Errorf("crabbox %s exited %d: %s", verb, c.code, c.message())
}

// bin finds the crabbox program.
func (p Provider) bin() (string, error) {
	name := p.Bin
	if name == "" {
		name = "crabbox"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: the crabbox CLI %q is not installed or not executable (install it from https://github.com/openclaw/crabbox, or name it with crabbox.bin in trusted policy)", sandbox.ErrUnavailable, name)
	}
	return path, nil
}

// command prepares a crabbox invocation for spec's lease, killed when ctx
// ends or git-lease dies: from the seed repository (or spec.Dir before it exists), with the
// lease's own config and state directory.
func (p Provider) command(ctx context.Context, spec sandbox.Spec, args ...string) (*exec.Cmd, error) {
	bin, err := p.bin()
	if err != nil {
		return nil, err
	}
	l := layout(spec)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = spec.Dir
	if _, err := os.Stat(l.seed); err == nil {
		cmd.Dir = l.seed
	}
	cmd.Env = append(p.env(os.Environ()), "CRABBOX_CONFIG="+l.config, "XDG_STATE_HOME="+l.state)
	// A killed crabbox's children (ssh, rsync) may hold its output open.
	cmd.WaitDelay = 5 * time.Second
	// crabbox dies with git-lease: a crashed git-lease must not leave a
	// run or a copy going that reconcile would race with.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

// env builds crabbox's environment from the host's (host): Crabbox acts
// on every CRABBOX_* variable over its config file (one mounts the host's
// Docker socket into a local container, which is root on the host), so none
// reaches it unless trusted policy names it in PassEnv. Also left out: what
// would choose its config, state or repository (git-lease sets
// CRABBOX_CONFIG and XDG_STATE_HOME itself), and the names Crabbox forwards
// to every remote command by default (CI, NODE_OPTIONS), so the agent gets
// nothing of the host's environment. The rest (PATH, HOME, the providers'
// own credentials such as DOCKER_HOST or AWS_PROFILE) stays: crabbox and
// its provider need them on the host.
func (p Provider) env(host []string) []string {
	drop := []string{
		"XDG_STATE_HOME", "CI", "NODE_OPTIONS",
		"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
		"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX",
	}
	var env []string
	for _, kv := range host {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case slices.Contains(drop, name):
		case strings.HasPrefix(name, "CRABBOX_") && (!slices.Contains(p.PassEnv, name) || reservedEnv(name)):
		default:
			env = append(env, kv)
		}
	}
	return env
}

// reservedEnv names the CRABBOX_* variables git-lease sets or that would
// undo what it sets, which trusted policy cannot pass either.
func reservedEnv(name string) bool {
	return name == "CRABBOX_CONFIG" || name == "CRABBOX_ENV_ALLOW"
}

// run runs crabbox for spec's lease and waits for it. onLine, when not nil, sees each line of its stdout as it comes.
// The error is for a crabbox that could not run at all, or ctx ending; a
// non-zero exit is in the call.
func (p Provider) run(ctx context.Context, spec sandbox.Spec, onLine func(string), args ...string) (call, error) {
	cmd, err := p.command(ctx, spec, args...)
	if err != nil {
		return call{}, err
	}
	stdout := &capped{max: maxStdout, onLine: onLine}
	stderr := &tail{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	c := call{args: args, stdout: stdout.bytes(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return c, fmt.Errorf("crabbox %s: %w", args[0], ctx.Err())
	case errors.As(err, &exit):
		c.code = exit.ExitCode()
	case err != nil:
		return c, fmt.Errorf("crabbox %s: %w", args[0], err)
	}
	return c, nil
}

// capped keeps the first max bytes written to it, and hands each complete
// line to onLine (when set).
type capped struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	onLine  func(string)
	partial []byte
}

func (c *capped) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(b[:min(len(b), room)])
	}
	if c.onLine != nil {
		c.partial = append(c.partial, b...)
		for {
			line, rest, ok := bytes.Cut(c.partial, []byte{'\n'})
			if !ok {
				break
			}
			c.onLine(string(line))
			c.partial = rest
		}
		if len(c.partial) > 64<<10 {
			c.partial = c.partial[:0]
		}
	}
	return len(b), nil
}

func (c *capped) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
