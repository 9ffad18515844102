package crabbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/git-lease/git-lease/sandbox"
)

// Launch prepares `crabbox run --id ID --stop-after never --timing-json --
// ARGV` from the seed repository: Crabbox syncs the base into the box's
// work directory and runs the agent there. Nothing runs before Release.
// The agent's environment (cmd.Env, plus LEASE_ID) reaches the box through
// an env profile file (--env-from-profile, one --allow-env per name); the
// host's own environment does not. A box gets no host files, so spec.Binds
// are not carried, and a variable that names a bound file is left out
// rather than point at nothing; the one exception is the prompt
// ($LEASE_PROMPT_FILE): Release uploads it with crabbox cp, after the
// lease's identities are recorded, and the agent gets it on its standard
// input (crabbox runs the remote command with ssh -n, so what is written to
// crabbox's own standard input never arrives) and in $LEASE_PROMPT_FILE. Wall time and output are bounded on the host (a
// host bound kills crabbox; the box's command is then stopped by Discard);
// every other bound, and the box's network, is the Crabbox provider's
// (spec.ProxySocket is not carried: git-lease's allowlist does not reach a
// box). It fails with ErrNoBox
// before Create, and with sandbox.ErrUnavailable when the box is not there
// and ready (`crabbox status --wait`).
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
	args := []string{"run", "--provider", p.CrabboxProvider, "--id", b.ID, "--stop-after", "never", "--timing-json"}
	env := cmd.Env
	prompt, env := promptFile(spec, env)
	names, err := writeEnvProfile(layout(spec).env, append(unbound(env, spec.Binds), "LEASE_ID="+spec.ID))
	if err != nil {
		return nil, err
	}
	args = append(args, "--env-from-profile", layout(spec).env)
	for _, name := range names {
		args = append(args, "--allow-env", name)
	}
	argv := cmd.Argv
	if cmd.Dir != "" {
		// crabbox runs the command at the top of the box's copy of the base.
		argv = append([]string{"sh", "-c", `cd -- "$1" && shift && exec "$@"`, "lease-cd", cmd.Dir}, argv...)
	}
	if prompt != "" {
		// crabbox runs the command with ssh -n, so its standard input is
		// empty: feed it the prompt file uploaded at Release.
		argv = append([]string{"sh", "-c", `exec "$@" < "$LEASE_PROMPT_FILE"`, "lease-prompt"}, argv...)
	}
	args = append(append(args, "--"), argv...)
	c, err := p.command(ctx, spec, args...)
	if err != nil {
		return nil, err
	}
	enforcement := fmt.Sprintf("crabbox provider %s (its own isolation, limits and network); wall time and output watched on the host", p.CrabboxProvider)
	proc, err := sandbox.NewProc(ctx, c, spec.Limits, cmd, enforcement)
	if err != nil {
		return nil, err
	}
	// NewProc sends stderr to the output; keep its tail for the report.
	stderr := &tail{max: maxStderr}
	c.Stderr = io.MultiWriter(c.Stderr, stderr)
	r := &process{Proc: proc, ctx: ctx, p: p, spec: spec, box: b.ID, args: args, stderr: stderr, prompt: prompt}
	r.input = &discardInput{pipe: proc.Input()}
	return r, nil
}

// promptIn is where a lease's prompt file is put on its box: outside the
// work directory, so it is never part of the result.
func promptIn(spec sandbox.Spec) string { return "/tmp/git-lease-" + spec.ID + ".prompt" }

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
				out[i] = "LEASE_PROMPT_FILE=" + promptIn(spec)
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
	stderr *tail
	prompt string // the prompt file on the host, or ""
	input  *discardInput
	failed error // Release could not start the run

	once sync.Once
	exit sandbox.Exit
	err  error
}

// Input is the agent's standard input on the host (see discardInput).
func (r *process) Input() io.WriteCloser { return r.input }

// Release uploads the prompt file to the box (the runner releases the agent
// only once the lease's identities are recorded, so the prompt never
// reaches a box before them), then starts crabbox run.
func (r *process) Release() error {
	if r.prompt != "" {
		c, err := r.p.run(r.ctx, r.spec, nil, "cp", "--provider", r.p.CrabboxProvider, "--id", r.box, r.prompt, "SANDBOX:"+promptIn(r.spec))
		if err == nil && c.code != 0 {
			err = c.err()
		}
		if err != nil {
			r.failed = fmt.Errorf("upload the prompt to box %s: %w", r.box, err)
			return r.failed
		}
	}
	return r.Proc.Release()
}

// Kill stops crabbox, if it runs.
func (r *process) Kill() {
	if r.failed == nil {
		r.Proc.Kill()
	}
}

// Wait waits for crabbox and reports the agent's exit: the remote
// command's own code (errorKind command-exit or none), or the wall bound
// (timeout). A run Crabbox canceled or could not carry out
// (provider-error, or no timing report at all) is an error.
func (r *process) Wait() (sandbox.Exit, error) {
	if r.failed != nil {
		os.Remove(layout(r.spec).env)
		return sandbox.Exit{}, r.failed
	}
	exit, err := r.Proc.Wait()
	r.once.Do(func() {
		os.Remove(layout(r.spec).env)
		r.exit, r.err = exit, err
		if err == nil && exit.Bound == "" {
			r.exit, r.err = r.outcome(exit)
		}
	})
	return r.exit, r.err
}

func (r *process) outcome(exit sandbox.Exit) (sandbox.Exit, error) {
	rep, ok := findReport(r.stderr.String())
	if !ok {
		return exit, fmt.Errorf("crabbox run on box %s ended without its timing report: %w", r.box, call{args: r.args, code: exit.Code, stderr: r.stderr.String()}.err())
	}
	if rep.LeaseID != "" && rep.LeaseID != r.box {
		return exit, fmt.Errorf("crabbox run reported lease %s, not the lease's box %s", rep.LeaseID, r.box)
	}
	// Crabbox exits with the remote command's code; a report that does not
	// explain crabbox's own exit is not crabbox's (the agent can print
	// anything on stderr before it).
	if (rep.ErrorKind == "" && exit.Code != 0) || (rep.ErrorKind == "command-exit" && exit.Code != *rep.ExitCode) {
		return exit, fmt.Errorf("crabbox run on box %s exited %d, which its timing report (errorKind %q, exit code %d) does not explain: %s", r.box, exit.Code, rep.ErrorKind, *rep.ExitCode, call{stderr: r.stderr.String()}.message())
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
		return exit, fmt.Errorf("crabbox could not run the agent on box %s (provider error, run status %s): %s", r.box, rep.RunStatus, call{stderr: r.stderr.String()}.message())
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
	Workdir   string `json:"workdir"`
}

// findReport finds the timing report in crabbox's stderr: Crabbox prints it
// as one JSON line after the agent has ended, so it is the last line that
// decodes as a report (only crabbox's final error message may follow it).
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
