package gitlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
)

// Repair is one thing reconcile did (or would do) for a lease.
type Repair struct {
	ID     refs.ID `json:"id"`
	State  State   `json:"state"`
	Action string  `json:"action"`
}

// ReconcileOptions are the inputs of git lease reconcile.
type ReconcileOptions struct {
	// Quick only settles leases whose process crashed while provisioning
	// or running, as start does before it begins; it resumes nothing and
	// retries no cleanup.
	Quick    bool
	Progress io.Writer
}

// Reconcile repairs, by execution ID and with the resources each lease
// already has, every lease started in this clone whose process crashed: a lease whose work lock
// is free but whose state says someone is working on it. It never creates
// a second sandbox, branch or worktree for a lease. Interrupted
// provisioning and a vanished agent end failed (the worktree and the
// sandbox's delta are kept for cleanup to judge); interrupted collection,
// verification and materialization resume; an apply whose checkout update
// was cut short finishes it; an unconfirmed cleanup is retried. Running it
// again changes nothing.
func Reconcile(ctx context.Context, repo *refs.Repo, opts ReconcileOptions) ([]Repair, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if _, err := Signing(repo, progress); err != nil {
		return nil, err
	}
	// Quick only looks at leases that were being worked on; it runs before
	// every start, so it does not load the others.
	// A log it cannot read is left alone: git lease doctor names it.
	all, _, err := listWhere(repo, func(s State) bool { return !opts.Quick || !s.Settled() })
	if err != nil {
		return nil, err
	}
	repairs := []Repair{}
	for _, x := range all {
		if x.Busy() || x.StartedElsewhere() || x.ReadOnly() {
			continue
		}
		action, err := x.reconcile(ctx, opts.Quick, progress)
		if action != "" {
			repairs = append(repairs, Repair{ID: x.Lease.ID, State: x.Lease.State, Action: action})
		}
		if err != nil {
			return repairs, fmt.Errorf("lease %s: %w", x.Lease.ID, err)
		}
	}
	return repairs, nil
}

func (x *Execution) reconcile(ctx context.Context, quick bool, progress io.Writer) (string, error) {
	var why string
	switch x.Lease.State {
	case Provisioning, Running:
		// A runner taking the lease over from start holds no lock yet.
		gone, reason := x.endpointGone(ctx)
		if !gone {
			return "", nil
		}
		why = reason
	case Collecting, Verifying:
		if quick {
			fmt.Fprintf(progress, "git-lease: lease %s was interrupted while %s: run git lease reconcile\n", x.Lease.ID, x.Lease.State)
			return "", nil
		}
	case Review, Applied:
		if quick {
			return "", nil
		}
		if c := x.Lease.Cleanup; c != nil && c.State != CleanupConfirmed {
			return x.retryCleanup(ctx)
		}
		unlock, err := x.Lock()
		if err != nil {
			return "", nil
		}
		defer unlock()
		return x.reconcileMaterialized(ctx)
	default:
		if quick || x.Lease.Cleanup == nil || x.Lease.Cleanup.State == CleanupConfirmed {
			return "", nil
		}
		// A cleanup recorded pending or failed: retry it.
		return x.retryCleanup(ctx)
	}
	unlock, err := x.Lock()
	if err != nil {
		if errors.Is(err, ErrBusy) {
			return "", nil
		}
		return "", err
	}
	defer unlock()
	switch x.Lease.State {
	case Provisioning:
		reason := "interrupted while provisioning (reconciled)"
		return "failed: " + reason, x.Move(ctx, Failed, func(l *Lease) { l.Reason = reason }, nil)
	case Running:
		return x.recoverVanished(ctx, why, progress)
	case Collecting:
		p, err := providerByName(x.Lease.Provider, x.Lease.Policy)
		if err != nil {
			return "", err
		}
		d, err := x.collectDelta(ctx, p, x.spec())
		if err != nil {
			reason := fmt.Sprintf("interrupted while collecting, and collecting again failed (reconciled): %v", err)
			return "failed: " + reason, x.Move(ctx, Failed, func(l *Lease) { l.Reason = reason }, nil)
		}
		if _, err := os.Lstat(d.Root); err != nil {
			reason := "interrupted while collecting, and the sandbox's delta is gone (reconciled)"
			return "failed: " + reason, x.Move(ctx, Failed, func(l *Lease) { l.Reason = reason }, nil)
		}
		return "resumed collection", x.collectAndVerify(ctx, d, progress)
	default: // Verifying
		if x.Lease.Result != nil && x.Lease.Result.Status == ResultQuarantined {
			return "finished quarantine", x.Move(ctx, Quarantined, nil, nil) // findings and reason are recorded
		}
		return "resumed checks and review", x.checkAndReview(ctx, progress)
	}
}

// retryCleanup retries a pending or failed cleanup and says what came of
// it, including a cleanup that failed again the same way (nothing written).
func (x *Execution) retryCleanup(ctx context.Context) (string, error) {
	c, changed, err := CleanupLease(ctx, x, CleanupOptions{})
	switch {
	case changed:
		return "retried cleanup: " + x.Lease.Cleanup.State, err
	case err == nil && c.State != CleanupConfirmed:
		return "cleanup is still " + c.State + " (git lease show " + x.Lease.ID.Short() + " says what is left)", nil
	}
	return "", err
}

// reconcileMaterialized finishes what a crash cut short after the log said
// review or applied: checking the result out into the review worktree,
// and updating the user's checkout after an apply.
func (x *Execution) reconcileMaterialized(ctx context.Context) (string, error) {
	if x.Lease.State == Applied {
		marker := filepath.Join(x.RunDir(), applyCheckoutMarker)
		b, err := os.ReadFile(marker)
		if err != nil {
			return "", nil
		}
		app := x.Lease.Applied
		wt := strings.TrimSpace(string(b))
		if wt != x.Repo.WorkTree {
			return "", fmt.Errorf("the checkout at %s needs its apply finished: run git lease reconcile there", wt)
		}
		err = x.Repo.Locked("apply", func() error {
			idx, err := x.Repo.GitAt(ctx, x.Repo.GitDir, []string{"GIT_WORK_TREE=" + wt}, nil, "write-tree")
			if err != nil {
				return err
			}
			from := plumbing.NewHash(app.From)
			if strings.TrimSpace(string(idx)) == mustTree(x.Repo, from).String() {
				return x.updateCheckout(ctx, from, plumbing.NewHash(app.Commit))
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		return "finished updating the checkout after apply", os.Remove(marker)
	}
	if x.agentWroteWorktree() || x.Lease.Cleanup != nil {
		return "", nil
	}
	// A sandboxed lease's review worktree is added while its agent works
	// or with the checkout of its result: it may be missing, or hold the
	// base.
	admin, err := x.worktreeAdmin()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(admin, "index")); admin != "" && err == nil && !x.stagedAtBase() {
		return "", nil
	}
	return "checked the result out into the review worktree", x.checkoutReview(ctx)
}

// recoverVanished settles a running lease whose runner is gone, keeping
// what the agent did: the agent's output so far goes into the log (so logs
// shows it), and what it left in its sandbox is collected and verified like
// any result into a partial result of a failed lease (or a quarantined one,
// when it breaks a rule), which show, diff and review read. The sandbox is
// left for cleanup. Nothing runs the agent any more: a sandbox dies with
// its runner (bwrap's --die-with-parent).
//
// A provider that copies the delta back from elsewhere (a Crabbox box) is
// not collected here: the lease ends failed, with its output, and cleanup
// stops the box.
func (x *Execution) recoverVanished(ctx context.Context, why string, progress io.Writer) (string, error) {
	if why == "" {
		why = "its runner is not running"
	}
	agent := &AgentRun{Exit: sandbox.Exit{Detail: why}, EndedAt: x.Repo.Now(), RunnerGone: true}
	if x.Lease.Activity != nil {
		agent.StartedAt = x.Lease.Activity.Since
	}
	files := map[string][]byte{}
	if out, n, ok := x.outputSoFar(); ok {
		files[outputFile], agent.OutputBytes = out, n
	}
	// Nothing may write the delta while it is collected.
	if item, ok := x.stopSandbox(); ok {
		if item.Action == ActionFailed {
			return "", fmt.Errorf("its sandbox outlived its runner and could not be stopped (%s): run git lease reconcile again", item.Detail)
		}
		why += "; its sandbox outlived it and was stopped (" + item.Detail + ")"
	}
	p, err := providerByName(x.Lease.Provider, x.Lease.Policy)
	var d sandbox.Delta
	if _, remote := p.(sandbox.Collector); err == nil && !remote {
		if d, err = p.Delta(x.spec()); err == nil {
			_, err = os.Lstat(d.Root)
		}
	} else if err == nil {
		err = errors.New("its delta is in the " + p.Name() + " sandbox; cleanup stops it")
	}
	if err != nil {
		reason := fmt.Sprintf("the agent is gone: %s (reconciled); nothing of its work could be collected: %v", why, err)
		return "failed: " + reason, x.Move(ctx, Failed, func(l *Lease) { l.Agent, l.Reason = agent, reason }, files)
	}
	if err := x.Move(ctx, Collecting, func(l *Lease) { l.Agent = agent }, files); err != nil {
		return "", err
	}
	if err := x.collectAndVerify(ctx, d, progress); err != nil {
		return "", err
	}
	summary := "no result"
	if r := x.Lease.Result; r != nil {
		summary = string(r.Status) + " result: " + r.Summary
	}
	return fmt.Sprintf("%s: the agent is gone (%s); collected what it left: %s", x.Lease.State, why, summary), nil
}

// outputSoFar is the agent's output as its runner left it, bounded, with
// the lease's credential values redacted. When they cannot be read again,
// the output is not kept (ok is false): a value could be in it.
func (x *Execution) outputSoFar() (out []byte, n int64, ok bool) {
	out, n, err := readHeadTail(filepath.Join(x.RunDir(), "agent.log"))
	if err != nil || out == nil {
		return nil, 0, false
	}
	if len(x.Lease.Credentials) == 0 {
		return out, n, true
	}
	trusted, err := policy.LoadForAgent(x.Repo, plumbing.ZeroHash, x.Lease.AgentPreset)
	if err != nil {
		return nil, 0, false
	}
	creds, err := x.readCredentials(trusted)
	if err != nil {
		return nil, 0, false
	}
	return redactor(creds).bytes(out), n, true
}
