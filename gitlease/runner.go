package gitlease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/process"
)

// Files the lease shares with its agent, and where the agent sees them.
const (
	promptInSandbox = "/run/lease/prompt"
	stateInSandbox  = "/run/lease/state"
)

// CancelGrace is how long a canceled agent has to stop after SIGINT
// before the whole sandbox is killed (git lease cancel --grace changes it).
const CancelGrace = 10 * time.Second

func (x *Execution) promptPath() string { return filepath.Join(x.RunDir(), "prompt") }
func (x *Execution) statePath() string  { return filepath.Join(x.RunDir(), "state") }

// Runner signals the lease's live runner process with SIGUSR1 (record that
// someone reconnected), reporting whether there was one.
func (x *Execution) signalRunner() bool {
	r, _, alive := process.Runner(x.RunDir())
	return alive && r.Signal(syscall.SIGUSR1) == nil
}

// runAgent runs a provisioned lease's agent and takes it to its result:
// it launches the sandbox with the agent held at its gate, records the
// sandbox and the supervisor endpoint (state running), releases the agent,
// then delivers the prompt and records it, so the prompt never arrives
// before every identity is in the log. While the agent runs it records
// the agent's state changes (working, blocked with its question, done),
// a reconnecting observer (SIGUSR1), and turns SIGINT, SIGTERM or a
// canceled ctx into a graceful cancel.
func (x *Execution) runAgent(ctx context.Context, provider sandbox.Provider, sup sandbox.Supervisor, endpoint sandbox.Endpoint, live, progress io.Writer) error {
	// Whatever the supervisor, this process is the runner: cancel and
	// wait find it here.
	if err := process.WriteRunner(x.RunDir(), os.Getpid()); err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	if err := createStateFile(x.statePath()); err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	spec := x.spec()
	spec.Binds = []sandbox.Bind{{Host: x.statePath(), Sandbox: stateInSandbox, Writable: true}}
	env := []string{"LEASE_STATE_FILE=" + stateInSandbox}
	if _, err := os.Stat(x.promptPath()); err == nil {
		spec.Binds = append(spec.Binds, sandbox.Bind{Host: x.promptPath(), Sandbox: promptInSandbox})
		env = append(env, "LEASE_PROMPT_FILE="+promptInSandbox)
	}
	if !provider.Sandboxed() {
		env = append(env, "LEASE_ID="+string(x.Lease.ID))
	}
	if provider.Name() == sandbox.Bwrap { // the one provider with caches
		env = append(env, cacheEnv(x.Lease.Policy.Caches)...)
	}
	l, err := x.launchFor(provider)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	if _, remote := provider.(sandbox.Collector); provider.Sandboxed() && !remote {
		// An agent installed under the home runs from its install
		// directory, bound read-only; found again here, as start found it.
		prog, err := findAgent(l.command[0], spec.ReadOnly, true)
		if err == nil {
			err = checkInstallDirs(x.Repo, prog.Binds)
		}
		if err != nil {
			return x.fail(ctx, err.Error(), err)
		}
		if prog.ByPath {
			l.command = append([]string{prog.Path}, l.command[1:]...)
		}
		spec.ReadOnly = append(slices.Clone(spec.ReadOnly), prog.Binds...)
		spec.PATH = prog.PATH
	}
	if provider.Sandboxed() {
		binds, err := x.homeBinds(l.homeFiles)
		if err != nil {
			return x.fail(ctx, fmt.Sprintf("agent home files: %v", err), err)
		}
		spec.Binds = append(spec.Binds, binds...)
	}
	sup = sup.AsAgent(l.herdrAgent)
	logPath := filepath.Join(x.RunDir(), "agent.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	defer logFile.Close()
	out := io.Writer(logFile)
	if live != nil {
		out = io.MultiWriter(logFile, live)
	}
	tty := x.Lease.Prompt != nil && x.Lease.Prompt.TTY
	cmd := sandbox.Command{Argv: l.command, Dir: x.Lease.Dir, Env: append(env, l.env...), TTY: tty, Output: out}
	a, err := x.openAccess(l, &spec, &cmd)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	defer a.close(nil)
	id, own, err := sandboxIdentity(provider, spec)
	if err != nil {
		return x.fail(ctx, fmt.Sprintf("sandbox: %v", err), err)
	}
	proc, err := provider.Launch(ctx, spec, cmd)
	if err != nil {
		return x.fail(ctx, fmt.Sprintf("sandbox: %v", err), err)
	}
	if err := x.recordSandbox(proc); err != nil {
		proc.Kill()
		proc.Wait()
		return x.fail(ctx, fmt.Sprintf("sandbox: %v", err), err)
	}
	receipts := []Receipt{
		{Kind: "provider", Name: string(provider.Name()), ID: id, Detail: proc.Enforcement()},
		endpointReceipt(endpoint),
	}
	err = x.Move(ctx, Running, func(l *Lease) {
		l.Enforcement, l.Supervisor = proc.Enforcement(), &endpoint
		l.Receipts = append(l.Receipts, receipts...)
	}, nil)
	if err != nil {
		proc.Kill()
		proc.Wait()
		return err
	}
	if own {
		fmt.Fprintf(progress, "lease %s: running in %s %s\n", x.Lease.ID, provider.Name(), id)
	}
	fault("start:running")
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGUSR1)
	defer signal.Stop(signals)
	started := x.Repo.Now()
	if err := proc.Release(); err != nil {
		return x.agentEnded(ctx, provider, spec, proc, a, logFile, logPath, started, 0, err, progress)
	}
	x.stageReview(ctx)
	defer x.waitStaged()
	pace := newActivityPacer(time.Now())
	x.activity(ctx, sup, endpoint, sandbox.StateWorking, sandbox.StateWorking, "", 0)
	if err := x.deliverPrompt(ctx, proc, tty); err != nil {
		fmt.Fprintf(progress, "git-lease: lease %s: %v\n", x.Lease.ID, err)
	}
	exited := make(chan struct{})
	go func() { proc.Wait(); close(exited) }()
	watch := time.NewTicker(300 * time.Millisecond)
	defer watch.Stop()
	// The agent is working since its release; record the changes of what
	// its state file says, as the pacer lets them through.
	for {
		select {
		case <-exited:
			x.noteActivity(ctx, sup, endpoint, pace, proc, true)
			sup.Report(ctx, endpoint, sandbox.StateDone, "")
			return x.agentEnded(ctx, provider, spec, proc, a, logFile, logPath, started, pace.unrecorded(), nil, progress)
		case sig := <-signals:
			if sig == syscall.SIGUSR1 {
				x.Event(ctx, "reconnected", nil, nil)
				continue
			}
			return x.cancel(ctx, provider, spec, proc, a, exited, fmt.Sprintf("canceled (%s)", sig), pace.unrecorded(), progress)
		case <-ctx.Done():
			return x.cancel(context.Background(), provider, spec, proc, a, exited, "canceled", pace.unrecorded(), progress)
		case <-watch.C:
			x.noteActivity(ctx, sup, endpoint, pace, proc, false)
		}
	}
}

// deliverPrompt writes the prompt to the agent's standard input (and
// closes it, unless the agent has a terminal), then records it.
func (x *Execution) deliverPrompt(ctx context.Context, proc sandbox.Process, tty bool) error {
	b, err := os.ReadFile(x.promptPath())
	if os.IsNotExist(err) || err == nil && x.promptInCommand() {
		if !tty {
			proc.Input().Close()
		}
		if err == nil {
			return x.Event(ctx, "prompted", nil, nil) // in the agent preset's command
		}
		return nil
	}
	if err != nil {
		return err
	}
	if tty && !strings.HasSuffix(string(b), "\n") {
		b = append(b, '\n')
	}
	_, werr := proc.Input().Write(b)
	if !tty {
		proc.Input().Close()
	}
	if err := x.Event(ctx, "prompted", nil, nil); err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("the agent did not read its prompt from standard input (%v); it is in $LEASE_PROMPT_FILE", werr)
	}
	return nil
}

// agentEnded records how the agent ended, with the evidence of its
// network, and collects its result.
func (x *Execution) agentEnded(ctx context.Context, provider sandbox.Provider, spec sandbox.Spec, proc sandbox.Process, a *access, logFile *os.File, logPath string, started time.Time, unrecorded int, runErr error, progress io.Writer) error {
	exit, waitErr := proc.Wait()
	if runErr == nil {
		runErr = waitErr
	}
	logFile.Close()
	network, files, findings := a.close(proc)
	escapes, attempts := escapeEvidence(proc, a.redact)
	findings = append(findings, attempts...)
	output, outputBytes, err := readHeadTail(logPath)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	agent := &AgentRun{Exit: exit, StartedAt: started, EndedAt: x.Repo.Now(), OutputBytes: outputBytes}
	files[outputFile] = a.redact.bytes(output)
	ran := func(r *Lease) {
		r.Agent, r.Network, r.Escapes, r.ActivityUnrecorded = agent, network, escapes, unrecorded
		r.addFindings(findings)
	}
	if runErr != nil {
		agent.Code = 127
		reason := fmt.Sprintf("agent could not start: %v", runErr)
		return x.Move(ctx, Failed, func(r *Lease) { ran(r); r.Reason = reason }, files)
	}
	done := &Activity{State: sandbox.StateDone, Since: x.Repo.Now()}
	if err := x.Event(ctx, "done", func(l *Lease) { l.Activity = done }, nil); err != nil {
		return err
	}
	if err := x.Move(ctx, Collecting, ran, files); err != nil {
		return err
	}
	fault("start:collecting")
	fmt.Fprintf(progress, "lease %s: agent exited %d; collecting\n", x.Lease.ID, exit.Code)
	d, err := x.collectDelta(ctx, provider, spec)
	if err != nil {
		reason := fmt.Sprintf("collect: %v", err)
		if f := agent.failure(); f != "" {
			reason = f + "; " + reason
		}
		return x.fail(ctx, reason, err)
	}
	return x.collectAndVerify(ctx, d, progress)
}

// collectDelta says where the agent's changes are on the host, first
// copying them there when the provider keeps them where the agent ran
// (sandbox.Collector: a Crabbox box). The runner calls it once the agent
// has ended; reconcile and collect --partial call it again.
func (x *Execution) collectDelta(ctx context.Context, provider sandbox.Provider, spec sandbox.Spec) (sandbox.Delta, error) {
	if c, ok := provider.(sandbox.Collector); ok {
		if err := c.Collect(ctx, spec); err != nil {
			return sandbox.Delta{}, err
		}
	}
	return provider.Delta(spec)
}

// cancel interrupts the agent (SIGINT), gives it the grace period (from
// git lease cancel, else cancelGrace) to stop, kills the whole sandbox if
// it has not, and records the lease canceled. The partial delta stays in
// the sandbox for git lease collect --partial, and its listing goes in the
// log; nothing is materialized.
func (x *Execution) cancel(ctx context.Context, provider sandbox.Provider, spec sandbox.Spec, proc sandbox.Process, a *access, exited <-chan struct{}, reason string, unrecorded int, progress io.Writer) error {
	grace := CancelGrace
	if b, err := os.ReadFile(filepath.Join(x.RunDir(), "cancel")); err == nil {
		if secs, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && secs >= 0 {
			grace = time.Duration(secs) * time.Second
		}
	}
	fmt.Fprintf(progress, "lease %s: canceling: the agent has %s to stop\n", x.Lease.ID, grace)
	proc.Interrupt()
	select {
	case <-exited:
	case <-time.After(grace):
		proc.Kill()
		<-exited
	}
	exit, _ := proc.Wait()
	network, files, findings := a.close(proc)
	escapes, attempts := escapeEvidence(proc, a.redact)
	findings = append(findings, attempts...)
	if d, err := provider.Delta(spec); err == nil {
		if entries, err := scan(ctx, d); err == nil {
			files[deltaFile] = listDelta(entries)
		}
	}
	canceled := func(r *Lease) {
		r.Reason, r.Network, r.Escapes, r.ActivityUnrecorded = reason, network, escapes, unrecorded
		r.addFindings(findings)
	}
	if out, n, err := readHeadTail(filepath.Join(x.RunDir(), "agent.log")); err == nil {
		files[outputFile] = a.redact.bytes(out)
		agent := &AgentRun{Exit: exit, EndedAt: x.Repo.Now(), OutputBytes: n}
		return x.Move(ctx, Canceled, func(r *Lease) { canceled(r); r.Agent = agent }, files)
	}
	return x.Move(ctx, Canceled, canceled, files)
}

// endpointReceipt is the supervisor's identity for the record.
func endpointReceipt(e sandbox.Endpoint) Receipt {
	r := Receipt{Kind: "supervisor", Name: e.Supervisor, ID: e.Label}
	if e.PaneID != "" {
		r.ID, r.Detail = e.PaneID, "terminal "+e.TerminalID+", label "+e.Label
	}
	return r
}

// promptRecord is what the log keeps of a prompt.
func promptRecord(text string, private, tty bool) *Prompt {
	sum := sha256.Sum256([]byte(text))
	p := &Prompt{SHA256: "sha256:" + hex.EncodeToString(sum[:]), TTY: tty}
	if !private {
		p.Text = text
	}
	return p
}
