package gitlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/worktree"
	"github.com/git-lease/git-lease/verify"
)

// StartOptions are the inputs of git lease start.
type StartOptions struct {
	Mode    Mode
	Base    string // revision; "" means HEAD
	Mission string
	Command []string
	// Output receives the agent's output live (nil: discarded).
	Output io.Writer
	// Progress receives one line per step (nil: discarded).
	Progress io.Writer
}

// ErrSandboxUnavailable is returned when sandboxed mode cannot be provided.
var ErrSandboxUnavailable = errors.New("sandboxed mode is not available")

// Start provisions a lease, runs the agent and collects its result, in the
// order of DESIGN.md: persist provisioning with the resolved base and the
// review branch, add the review worktree, bind the sandbox, run, collect.
// An error before the first log entry leaves nothing behind; after it, the
// lease records what went wrong and the execution is returned with it.
func Start(ctx context.Context, repo *refs.Repo, opts StartOptions) (*Execution, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("no agent command: give it after --, as in git lease start -- make fix")
	}
	provider, err := providerFor(opts.Mode)
	if err != nil {
		return nil, err
	}
	rev := opts.Base
	if rev == "" {
		rev = "HEAD"
	}
	base, err := repo.ResolveCommit(rev)
	if err != nil {
		return nil, err
	}
	id, err := refs.NewID(func(id refs.ID) bool {
		h, _ := repo.Ref(id.LogRef())
		b, _ := repo.Ref(id.BranchRef())
		_, statErr := os.Lstat(repo.LeaseDir("worktrees", string(id)))
		return !h.IsZero() || !b.IsZero() || statErr == nil
	})
	if err != nil {
		return nil, err
	}
	now := repo.Now()
	x := &Execution{Repo: repo, Lease: &Lease{
		Version: RecordVersion, ID: id, Mode: opts.Mode, Sandboxed: provider.Sandboxed(), Provider: provider.Name(),
		Base: base.String(), BaseRef: repo.BranchOf(rev), Branch: id.Branch(), Mission: opts.Mission,
		Command: opts.Command, CreatedAt: now,
	}}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	err = x.Move(ctx, Provisioning, nil, nil, refs.RefUpdate{Name: id.BranchRef(), Old: plumbing.ZeroHash, New: base})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "lease %s: provisioning %s lease on %s\n", id, x.Lease.Mode, base.String()[:12])
	fault("start:provisioning")
	if err := x.run(ctx, provider, opts.Output, progress); err != nil {
		return x, err
	}
	return x, nil
}

func providerFor(mode Mode) (sandbox.Provider, error) {
	switch mode {
	case TrustedLocal:
		return worktree.Provider{}, nil
	case Sandboxed, "":
		return nil, fmt.Errorf("%w yet: use --mode trusted_local (not sandboxed: the agent runs as you)", ErrSandboxUnavailable)
	}
	return nil, fmt.Errorf("unknown mode %q: use sandboxed or trusted_local", mode)
}

// spec is the sandbox spec of this lease.
func (x *Execution) spec() sandbox.Spec {
	return sandbox.Spec{
		ID:       string(x.Lease.ID),
		Dir:      filepath.Join(x.RunDir(), "sandbox"),
		Worktree: x.Worktree(),
		Limits:   sandbox.Limits{OutputBytes: 8 << 20},
	}
}

// run takes a provisioning lease through the agent's run to its result.
func (x *Execution) run(ctx context.Context, provider sandbox.Provider, live io.Writer, progress io.Writer) error {
	spec := x.spec()
	if err := x.addWorktree(ctx); err != nil {
		return x.fail(ctx, fmt.Sprintf("review worktree: %v", err), err)
	}
	fault("start:worktree")
	if err := provider.Create(ctx, spec); err != nil {
		return x.fail(ctx, fmt.Sprintf("sandbox: %v", err), err)
	}
	if err := x.Move(ctx, Running, nil, nil); err != nil {
		return err
	}
	fault("start:running")
	if err := os.MkdirAll(x.RunDir(), 0o700); err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	logPath := filepath.Join(x.RunDir(), "agent.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	out := io.Writer(logFile)
	if live != nil {
		out = io.MultiWriter(logFile, live)
	}
	cmd := sandbox.Command{Argv: x.Lease.Command, Env: []string{"LEASE_ID=" + string(x.Lease.ID)}, Output: out}
	started := x.Repo.Now()
	exit, runErr := provider.Run(ctx, spec, cmd)
	logFile.Close()
	output, outputBytes, err := readHeadTail(logPath)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	agent := &AgentRun{Exit: exit, StartedAt: started, EndedAt: x.Repo.Now(), OutputBytes: outputBytes}
	files := map[string][]byte{outputFile: output}
	if runErr != nil {
		agent.Code = 127
		reason := fmt.Sprintf("agent could not start: %v", runErr)
		return x.Move(ctx, Failed, func(l *Lease) { l.Agent, l.Reason = agent, reason }, files)
	}
	if err := x.Move(ctx, Collecting, func(l *Lease) { l.Agent = agent }, files); err != nil {
		return err
	}
	fault("start:collecting")
	fmt.Fprintf(progress, "lease %s: agent exited %d; collecting\n", x.Lease.ID, exit.Code)
	return x.collectAndVerify(ctx, provider.Delta(spec), progress)
}

// collectAndVerify computes the result on the host and moves the lease to
// review (or failed, when the agent failed or hit a bound).
func (x *Execution) collectAndVerify(ctx context.Context, d sandbox.Delta, progress io.Writer) error {
	base := plumbing.NewHash(x.Lease.Base)
	c, err := collect(ctx, x.Repo, base, d)
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	commit, err := x.Repo.WriteCommit(c.Tree, []plumbing.Hash{base},
		fmt.Sprintf("lease %s: %s\n\nLease-ID: %s\nLease-Base: %s\n", x.Lease.ID, summarize(c.Manifest.Files), x.Lease.ID, base))
	if err != nil {
		return x.fail(ctx, err.Error(), err)
	}
	result := &Result{
		Status: "ok", Summary: summarize(c.Manifest.Files), Base: x.Lease.Base, Commit: commit.String(),
		Tree: c.Tree.String(), Manifest: c.Manifest.Files,
	}
	files := map[string][]byte{manifestFile: c.Manifest.Marshal(), patchFile: c.Patch}
	result.PatchDigest = verify.PatchDigest(c.Patch)
	if reason := x.Lease.Agent.failure(); reason != "" {
		result.Status = "failed"
		return x.Move(ctx, Failed, func(l *Lease) { l.Result, l.Reason = result, reason }, files)
	}
	if err := x.Move(ctx, Verifying, func(l *Lease) { l.Result = result }, files); err != nil {
		return err
	}
	fault("start:verifying")
	branch := refs.RefUpdate{Name: x.Lease.ID.BranchRef(), Old: base, New: commit}
	if err := x.Move(ctx, Review, nil, nil, branch); err != nil {
		return err
	}
	fault("start:review")
	if err := x.syncWorktree(ctx); err != nil {
		return err
	}
	fmt.Fprintf(progress, "lease %s: review: %s\n", x.Lease.ID, result.Summary)
	return nil
}

// failure says why an agent run counts as failed, or "" when it succeeded.
func (a *AgentRun) failure() string {
	switch {
	case a == nil:
		return "the agent did not run"
	case a.Bound != "":
		return fmt.Sprintf("the agent hit the %s bound", a.Bound)
	case a.Signal != "":
		return fmt.Sprintf("the agent was killed by %s", a.Signal)
	case a.Code != 0:
		return fmt.Sprintf("the agent exited with code %d", a.Code)
	}
	return ""
}

// fail records a failure that is not the agent's own and returns cause.
func (x *Execution) fail(ctx context.Context, reason string, cause error) error {
	if err := x.Move(ctx, Failed, func(l *Lease) { l.Reason = reason }, nil); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}
