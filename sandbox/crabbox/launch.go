package crabbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/git-lease/git-lease/sandbox"
)

// Launch prepares `crabbox run --id ID --no-sync --stop-after never
// --timing-json --capture-stdout F --capture-stderr F -- sh -c BOXRUN …`
// from the seed repository. Nothing runs before Release, which uploads the
// base (and the prompt) to boxDir on the box with crabbox cp. On the box,
// BOXRUN unpacks the base into boxDir/tree, runs the agent there (in
// cmd.Dir under it), and packs the tree into boxDir/result.tar once the
// agent has ended, for Collect. Crabbox's sync is not used (--no-sync), so
// nothing it skips or keeps is part of a result.
//
// The agent's environment (cmd.Env, plus LEASE_ID) reaches the box through
// an env profile file (--env-from-profile, one --allow-env per name); the
// host's own environment does not. A box gets no host files, so spec.Binds
// are not carried, and a variable that names a bound file is left out
// rather than point at nothing; the one exception is the prompt
// ($LEASE_PROMPT_FILE), uploaded at Release (after the lease's identities
// are recorded), fed to the agent's standard input (crabbox runs the remote
// command with ssh -n, so what is written to crabbox's own standard input
// never arrives) and named by $LEASE_PROMPT_FILE on the box.
//
// Crabbox writes the agent's standard output and error to files of the
// lease (--capture-stdout/--capture-stderr), apart from its own messages,
// which only go into error reports; Wait hands the agent's output to
// cmd.Output once the run has ended (stdout, then stderr), within
// Limits.OutputBytes. Wall time and output are bounded on the host (a host
// bound kills crabbox; the box's command is then stopped by Discard); every
// other bound, and the box's network, is the Crabbox provider's
// (spec.Proxy is not carried: git-lease's allowlist does not reach a
// box). It fails with ErrNoBox before Create, and with
// sandbox.ErrUnavailable when the box is not there and ready (`crabbox
// status --wait`).
func (p Provider) Launch(ctx context.Context, spec sandbox.Spec, cmd sandbox.Command) (sandbox.Process, error) {
	b, err := readBox(spec)
	if err != nil {
		return nil, err
	}
	if len(cmd.Argv) == 0 {
		return nil, fmt.Errorf("no agent command to run")
	}
	if err := p.alive(ctx, spec, b.ID); err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	l := layout(spec)
	for _, f := range []string{l.run, l.stdout, l.stderr} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	args := []string{"run", "--provider", p.CrabboxProvider, "--id", b.ID, "--no-sync", "--stop-after", "never", "--timing-json",
		"--capture-stdout", l.stdout, "--capture-stderr", l.stderr}
	prompt, env := promptFile(spec, cmd.Env)
	env = append(unbound(env, spec.Binds), "LEASE_ID="+spec.ID, boxDirVar+"="+boxDir(spec))
	names, err := writeEnvProfile(l.env, env)
	if err != nil {
		return nil, err
	}
	args = append(args, "--env-from-profile", l.env)
	for _, name := range names {
		args = append(args, "--allow-env", name)
	}
	dir := cmd.Dir
	if dir == "" {
		dir = "."
	}
	args = append(append(args, "--", "sh", "-c", boxRun, "git-lease-box", dir), cmd.Argv...)
	c, err := p.command(ctx, spec, args...)
	if err != nil {
		return nil, err
	}
	enforcement := fmt.Sprintf("crabbox provider %s (its own isolation, limits and network); wall time and output watched on the host", p.CrabboxProvider)
	// The agent's output reaches cmd.Output from the capture files (see
	// Wait); crabbox's own output is kept apart.
	agent := cmd
	agent.Output = io.Discard
	proc, err := sandbox.NewProc(ctx, c, spec.Limits, agent, enforcement)
	if err != nil {
		return nil, err
	}
	if spec.Limits.OutputBytes > 0 {
		proc.Watch = func() string {
			if fileSize(l.stdout)+fileSize(l.stderr) > spec.Limits.OutputBytes {
				return sandbox.BoundOutput
			}
			return ""
		}
	}
	own := &tail{max: maxStderr}
	c.Stdout, c.Stderr = own, own
	r := &process{Proc: proc, ctx: ctx, p: p, spec: spec, box: b.ID, args: args, own: own, prompt: prompt, output: cmd.Output}
	r.input = &discardInput{pipe: proc.Input()}
	return r, nil
}

// boxDirVar carries boxDir to boxRun through the env profile; boxRun takes
// it out of the agent's environment.
const boxDirVar = "GIT_LEASE_BOX"

// boxRun is the box's side of a run (sh -c boxRun git-lease-box DIR
// ARGV…): unpack the uploaded base into tree/, run ARGV in tree/DIR with
// the prompt (or nothing) on its standard input, then pack tree/ into
// result.tar (atomically: a result.tar is always whole) and exit with the
// agent's code. A box that cannot unpack the base exits 125 with a message
// and leaves no result.tar, so Collect fails. One line, so that it reads as
// one in logs.
const boxRun = `d=$` + boxDirVar + `; unset ` + boxDirVar + `; cd -- "$d" || exit 125; ` +
	`rm -rf tree result.tar result.tar.part; ` +
	`{ mkdir tree && tar -xpf base.tar -C tree; } || { echo "git-lease: cannot unpack the base in $d" >&2; exit 125; }; ` +
	`in=/dev/null; [ -z "${LEASE_PROMPT_FILE:-}" ] || in=$LEASE_PROMPT_FILE; ` +
	`(cd -- "tree/$1" && shift && exec "$@") < "$in"; code=$?; ` +
	`{ (cd tree && tar -cpf ../result.tar.part .) && mv result.tar.part result.tar; } || echo "git-lease: cannot pack the result in $d" >&2; ` +
	`exit $code`

// fileSize is the size of a file, 0 when it cannot be read.
func fileSize(name string) int64 {
	info, err := os.Stat(name)
	if err != nil {
		return 0
	}
	return info.Size()
}

// promptFile finds the prompt among spec.Binds (the bind that
// $LEASE_PROMPT_FILE names) and returns its host path, with env pointing
// LEASE_PROMPT_FILE at the box's copy instead; with no prompt, env is
// returned as it is.
func promptFile(spec sandbox.Spec, env []string) (string, []string) {
	for i, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if name != "LEASE_PROMPT_FILE" {
			continue
		}
		for _, b := range spec.Binds {
			if b.Sandbox == value && !b.Writable {
				out := slices.Clone(env)
				out[i] = "LEASE_PROMPT_FILE=" + boxDir(spec) + "/prompt"
				return b.Host, out
			}
		}
	}
	return "", env
}

// discardInput is a box agent's standard input on the host: crabbox does
// not pass its own to the remote command (ssh -n), so what is written is
// dropped (never blocking on a pipe nobody reads), and Close closes crabbox's
// standard input. The prompt reaches the agent as a file instead.
type discardInput struct {
	pipe io.WriteCloser
}

func (d *discardInput) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardInput) Close() error                { return d.pipe.Close() }

// process is a crabbox run: Wait reads how the run ended from Crabbox's
// timing report rather than from crabbox's exit code.
type process struct {
	*sandbox.Proc
	ctx    context.Context
	p      Provider
	spec   sandbox.Spec
	box    string
	args   []string
	own    *tail  // crabbox's own output
	prompt string // the prompt file on the host, or ""
	output io.Writer
	input  *discardInput
	failed error // Release could not start the run

	once sync.Once
	exit sandbox.Exit
	err  error
}

// Input is the agent's standard input on the host (see discardInput).
func (r *process) Input() io.WriteCloser { return r.input }

// Release uploads the base and the prompt file to the box (the runner
// releases the agent only once the lease's identities are recorded, so the
// prompt never reaches a box before them), then starts crabbox run.
func (r *process) Release() error {
	dir, err := outbox(r.ctx, r.spec, r.prompt)
	if err == nil {
		var c call
		c, err = r.p.run(r.ctx, r.spec, nil, "cp", "--provider", r.p.CrabboxProvider, "--id", r.box, dir, "SANDBOX:"+path.Dir(boxDir(r.spec)))
		if err == nil && c.code != 0 {
			err = c.err()
		}
	}
	if err != nil {
		r.failed = fmt.Errorf("upload the base and the prompt to box %s: %w", r.box, err)
		return r.failed
	}
	return r.Proc.Release()
}

// Kill stops crabbox, if it runs.
func (r *process) Kill() {
	if r.failed == nil {
		r.Proc.Kill()
	}
}

// Wait waits for crabbox, hands the agent's captured output to the
// command's Output, and reports the agent's exit: the remote command's own
// code (errorKind command-exit or none), or the bound it hit. A run
// Crabbox canceled or could not carry out (provider-error, or no timing
// report at all) is an error.
func (r *process) Wait() (sandbox.Exit, error) {
	if r.failed != nil {
		os.Remove(layout(r.spec).env)
		return sandbox.Exit{}, r.failed
	}
	exit, err := r.Proc.Wait()
	r.once.Do(func() {
		os.Remove(layout(r.spec).env)
		if over := r.passOutput(); over && exit.Bound == "" {
			exit.Bound = sandbox.BoundOutput
		}
		r.exit, r.err = exit, err
		if err == nil && exit.Bound == "" {
			r.exit, r.err = r.outcome(exit)
		}
	})
	return r.exit, r.err
}

// passOutput copies the agent's captured standard output, then its
// standard error, to the command's Output, at most Limits.OutputBytes in
// all (0: no limit); over is true when there was more.
func (r *process) passOutput() (over bool) {
	w := &limitedWriter{w: r.output, limit: r.spec.Limits.OutputBytes}
	if w.w == nil {
		w.w = io.Discard
	}
	for _, name := range []string{layout(r.spec).stdout, layout(r.spec).stderr} {
		if f, err := os.Open(name); err == nil {
			io.Copy(w, f)
			f.Close()
		}
	}
	return w.limit > 0 && w.written > w.limit
}

// limitedWriter passes the first limit bytes written to it (0: no limit)
// and counts them all.
type limitedWriter struct {
	w              io.Writer
	limit, written int64
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	n := len(b)
	if l.limit > 0 {
		b = b[:min(int64(n), max(l.limit-l.written, 0))]
	}
	l.written += int64(n)
	if len(b) > 0 {
		l.w.Write(b)
	}
	return n, nil
}

func (r *process) outcome(exit sandbox.Exit) (sandbox.Exit, error) {
	rep, ok := findReport(r.own.String())
	if !ok {
		return exit, fmt.Errorf("crabbox run on box %s ended without its timing report: %w", r.box, call{args: r.args, code: exit.Code, stderr: r.own.String()}.err())
	}
	if rep.LeaseID != "" && rep.LeaseID != r.box {
		return exit, fmt.Errorf("crabbox run reported lease %s, not the lease's box %s", rep.LeaseID, r.box)
	}
	// Crabbox exits with the remote command's code; a report that does not
	// explain crabbox's own exit is not crabbox's.
	if (rep.ErrorKind == "" && exit.Code != 0) || (rep.ErrorKind == "command-exit" && exit.Code != *rep.ExitCode) {
		return exit, fmt.Errorf("crabbox run on box %s exited %d, which its timing report (errorKind %q, exit code %d) does not explain: %s", r.box, exit.Code, rep.ErrorKind, *rep.ExitCode, call{stderr: r.own.String()}.message())
	}
	if err := writeRun(r.spec, rep); err != nil {
		return exit, err
	}
	switch rep.ErrorKind {
	case "", "command-exit":
		return sandbox.Exit{Code: *rep.ExitCode}, nil
	case "timeout":
		return sandbox.Exit{Code: *rep.ExitCode, Bound: sandbox.BoundWall, Detail: "crabbox reported the run timed out"}, nil
	case "canceled":
		return exit, fmt.Errorf("crabbox canceled the run on box %s", r.box)
	case "provider-error":
		return exit, fmt.Errorf("crabbox could not run the agent on box %s (provider error, run status %s): %s", r.box, rep.RunStatus, call{stderr: r.own.String()}.message())
	}
	return exit, fmt.Errorf("crabbox reported the run on box %s ended with an unknown errorKind %q", r.box, rep.ErrorKind)
}

// report is the part of Crabbox's timing report (run --timing-json) that
// git-lease reads.
type report struct {
	LeaseID   string `json:"leaseId"`
	ExitCode  *int   `json:"exitCode"`
	RunStatus string `json:"runStatus"`
	ErrorKind string `json:"errorKind"`
}

// findReport finds the timing report in crabbox's own output: Crabbox
// prints it as one JSON line on stderr after the agent has ended, so it is
// the last line that decodes as a report (only crabbox's final error
// message may follow it). The agent's output is captured apart.
func findReport(stderr string) (report, bool) {
	lines := strings.Split(stderr, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		var rep report
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rep) == nil && rep.ExitCode != nil && rep.RunStatus != "" {
			return rep, true
		}
	}
	return report{}, false
}

// runRecord is run.json: the finished run's report.
type runRecord struct {
	Version int `json:"version"`
	report
}

func writeRun(spec sandbox.Spec, rep report) error {
	data, err := json.Marshal(runRecord{Version: 1, report: rep})
	if err != nil {
		return err
	}
	return writeFile(layout(spec).run, append(data, '\n'), 0o600)
}

// unbound is env without the variables whose value is where a bind would
// have put a host file in the sandbox.
func unbound(env []string, binds []sandbox.Bind) []string {
	var out []string
	for _, kv := range env {
		_, value, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(binds, func(b sandbox.Bind) bool { return b.Sandbox == value }) {
			out = append(out, kv)
		}
	}
	return out
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// writeEnvProfile writes env as a Crabbox env profile (NAME='value' lines,
// which Crabbox's parser reads verbatim) and returns the names. Crabbox
// cannot carry every value that way: a value with a quote, a line break,
// "$(" or a backtick is refused, as are names Crabbox reserves.
func writeEnvProfile(path string, env []string) ([]string, error) {
	var b strings.Builder
	var names []string
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case !envName.MatchString(name) || strings.HasPrefix(name, "CRABBOX_"):
			return nil, fmt.Errorf("the agent's environment variable %q cannot go through Crabbox: it is not a shell name or is reserved by Crabbox", name)
		case strings.ContainsAny(value, "'\n\r\x00`") || strings.Contains(value, "$("):
			return nil, fmt.Errorf("the agent's environment variable %s cannot go through Crabbox's env profile: its value holds a quote, a line break, $( or a backtick", name)
		}
		fmt.Fprintf(&b, "%s='%s'\n", name, value)
		names = append(names, name)
	}
	return names, writeFile(path, []byte(b.String()), 0o600)
}
