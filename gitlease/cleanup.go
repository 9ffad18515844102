package gitlease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/process"
	"github.com/git-lease/git-lease/verify"
)

// CleanupOptions are the inputs of git lease cleanup.
type CleanupOptions struct {
	// KeepEdits records human edits found in the review worktree as a
	// commit on branch lease/<id>-edits, then removes the worktree.
	KeepEdits bool
}

// CleanupLease removes a settled lease's runtime resources (its sandbox and
// the base it alone used, any copies of credential files a crash left, the
// review worktree unless it holds human edits the lease did not record, its
// local run directory) and records a cleanup receipt saying how each
// removal was confirmed. The log, the branch and the result stay, so show,
// diff, review and apply still work. It is idempotent: when everything is
// already gone and the recorded state is confirmed, it writes nothing and
// reports changed = false. A failed cleanup that fails again the same way
// also writes nothing, and keeps the run directory (and so the provider's
// record of what is still there) for the next try.
func CleanupLease(ctx context.Context, x *Execution, opts CleanupOptions) (c *Cleanup, changed bool, err error) {
	if !x.Lease.State.Settled() {
		return nil, false, fmt.Errorf("lease %s is %s: cancel it or wait for it before cleaning up", x.Lease.ID, x.Lease.State)
	}
	if x.StartedElsewhere() {
		return nil, false, x.startedElsewhere("clean it up")
	}
	if _, err := Signing(x.Repo, os.Stderr); err != nil {
		return nil, false, err
	}
	unlock, err := x.Lock()
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	prev := x.Lease.Cleanup
	if prev == nil {
		// Recorded first, so that reconcile retries a cleanup cut short
		// (it retries pending and failed ones alike).
		pending := &Cleanup{State: CleanupPending, Receipt: []CleanupItem{}}
		if err := x.Event(ctx, "cleanup-pending", func(l *Lease) { l.Cleanup = pending }, nil); err != nil {
			return nil, false, err
		}
	}
	c = &Cleanup{State: CleanupConfirmed, Receipt: []CleanupItem{}}
	add := func(item CleanupItem) {
		item.Detail = x.hostFree(item.Detail) // the receipt is signed and pushed
		c.Receipt = append(c.Receipt, item)
		if item.Action == ActionFailed {
			c.State = CleanupFailed
		}
	}
	add(x.closeSupervisor(ctx))
	if item, ok := x.stopRunner(ctx); ok {
		add(item)
	}
	if item, ok := x.stopSandbox(); ok {
		add(item)
	}
	// What the agent wrote is recorded before the sandbox goes: when the
	// log does not hold it as a result, its listing and digest.
	kept, recorded := x.recordDiscarded(ctx)
	if recorded.Resource != "" {
		add(recorded)
	}
	if kept {
		add(CleanupItem{Resource: "sandbox", Action: ActionKept, Detail: "the agent's work in it could not be recorded first"})
	} else {
		add(x.discardSandbox(ctx))
	}
	if item, ok := x.keptBySandbox(); ok {
		add(item)
	}
	fault("cleanup:sandbox")
	if item, ok := x.removeCredentialFiles(); ok {
		add(item)
	}
	add(x.removeWorktree(ctx, opts.KeepEdits))
	fault("cleanup:worktree")
	if prev != nil && sameOutcome(prev, c) {
		if c.State != CleanupConfirmed {
			// The run directory holds what the next try needs (a
			// provider's record of a box that is not confirmed gone).
			return prev, false, nil
		}
		return prev, false, os.RemoveAll(x.RunDir())
	}
	env, err := x.sign(verify.PredicateCleanup, cleanupPredicate{x.Lease.ID, c}, commitSubject("base", x.Lease.Base))
	if err != nil {
		return nil, false, err
	}
	err = x.Event(ctx, "cleanup-"+c.State, func(l *Lease) { l.Cleanup = c }, map[string][]byte{cleanupReceipt: env})
	if err != nil {
		return nil, false, err
	}
	if c.State == CleanupConfirmed {
		// Last, and only when all else is confirmed: the run directory holds
		// the lock and what reconcile needs to retry.
		os.RemoveAll(x.RunDir())
	}
	return c, true, nil
}

// sameOutcome reports whether a cleanup found nothing new since prev: the
// same state, and each resource either gone or left as prev left it.
func sameOutcome(prev, now *Cleanup) bool {
	if prev.State != now.State {
		return false
	}
	for _, item := range now.Receipt {
		if item.Action == ActionAbsent {
			continue
		}
		found := false
		for _, p := range prev.Receipt {
			found = found || p == item
		}
		if !found {
			return false
		}
	}
	return true
}

// closeSupervisor removes the lease's supervisor endpoint (a Herdr pane,
// a runner still waiting) and confirms it is gone.
func (x *Execution) closeSupervisor(ctx context.Context) CleanupItem {
	item := CleanupItem{Resource: "supervisor"}
	e := x.Lease.Supervisor
	if e == nil {
		item.Action = ActionAbsent
		return item
	}
	item.Detail = endpointReceipt(*e).Name + " " + endpointReceipt(*e).ID
	sup, err := x.supervisorOf()
	if err != nil {
		item.Action, item.Detail = ActionFailed, err.Error()
		return item
	}
	// Close even an endpoint whose runner is gone: a Herdr restart leaves
	// the lease's pane behind with a new terminal, which Close tells from
	// someone else's pane and closes.
	alive, _ := sup.Alive(ctx, *e)
	if err := sup.Close(ctx, *e); err != nil {
		item.Action, item.Detail = ActionFailed, err.Error()
		return item
	}
	item.Action = ActionRemoved
	if !alive {
		item.Action = ActionAbsent
	}
	return item
}

// discardSandbox asks the lease's provider to remove its sandbox, and
// confirms that its directory is gone. The receipt names the provider and
// the sandbox identities bound to the lease (a Crabbox box ID).
func (x *Execution) discardSandbox(ctx context.Context) CleanupItem {
	item := CleanupItem{Resource: "sandbox", Detail: x.Lease.Provider}
	for _, r := range x.Lease.Receipts {
		if r.Kind == "provider" {
			item.Detail += " " + r.ID
		}
	}
	spec := x.spec()
	if _, err := os.Lstat(spec.Dir); errors.Is(err, fs.ErrNotExist) {
		item.Action = ActionAbsent
		// The base reference is released with the sandbox; release it
		// again in case a crash came between the two.
		if p, err := providerByName(x.Lease.Provider, x.Lease.Policy); err == nil {
			p.Discard(ctx, spec)
		}
		return item
	}
	p, err := providerByName(x.Lease.Provider, x.Lease.Policy)
	if err == nil {
		err = p.Discard(ctx, spec)
	}
	if err == nil {
		if _, statErr := os.Lstat(spec.Dir); statErr == nil {
			err = fmt.Errorf("%s is still there", spec.Dir)
		}
	}
	if err != nil {
		item.Action, item.Detail = ActionFailed, err.Error()
		return item
	}
	item.Action = ActionRemoved
	return item
}

// keptBySandbox names what the provider keeps of the discarded sandbox
// (sandbox.Keeper), with its size and digest.
func (x *Execution) keptBySandbox() (item CleanupItem, ok bool) {
	p, err := providerByName(x.Lease.Provider, x.Lease.Policy)
	k, keeps := p.(sandbox.Keeper)
	if err != nil || !keeps {
		return item, false
	}
	kept := k.Kept(x.spec())
	if kept == "" {
		return item, false
	}
	item = CleanupItem{Resource: x.Lease.Provider + "-record", Action: ActionKept}
	f, err := os.Open(kept)
	if err != nil {
		item.Action, item.Detail = ActionFailed, err.Error()
		return item, true
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		item.Action, item.Detail = ActionFailed, err.Error()
		return item, true
	}
	item.Detail = fmt.Sprintf("%s (%d bytes, sha256:%x)", kept, n, h.Sum(nil))
	return item, true
}

// removeWorktree removes the review worktree unless it holds edits the
// lease did not record, and confirms git no longer lists it.
func (x *Execution) removeWorktree(ctx context.Context, keepEdits bool) CleanupItem {
	item := CleanupItem{Resource: "review-worktree"}
	path := x.Worktree()
	admin, _ := x.worktreeAdmin()
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) && admin == "" {
		item.Action = ActionAbsent
		return item
	}
	if expected, ok := x.worktreeExpected(); ok {
		edits, err := x.worktreeEdits(ctx, expected)
		if err != nil {
			item.Action, item.Detail = ActionFailed, "cannot tell whether it holds edits: "+err.Error()
			return item
		}
		if edits != nil {
			if !keepEdits {
				item.Action = ActionKept
				item.Detail = fmt.Sprintf("it holds edits the lease did not record (%d paths); commit them, or run cleanup --keep-edits", len(edits.paths))
				return item
			}
			if err := x.Repo.Update(ctx, "git lease cleanup --keep-edits", refs.RefUpdate{Name: x.Lease.ID.BranchRef() + "-edits", New: edits.commit}); err != nil {
				item.Action, item.Detail = ActionFailed, "recording the edits: "+err.Error()
				return item
			}
			item.Detail = fmt.Sprintf("edits recorded as %s on %s-edits; ", edits.commit.String()[:12], x.Lease.Branch)
		}
	}
	removeTree(path)
	if _, err := x.Repo.Worktree(ctx, "prune"); err != nil {
		item.Action, item.Detail = ActionFailed, err.Error()
		return item
	}
	if admin, _ := x.worktreeAdmin(); admin != "" {
		item.Action, item.Detail = ActionFailed, "git still lists the worktree"
		return item
	}
	item.Action, item.Detail = ActionRemoved, item.Detail+"git worktree prune no longer lists it"
	return item
}

// worktreeExpected is what the review worktree holds when nobody touched
// it, when that is known: the base for a sandboxed lease whose base was
// checked out while its agent worked and whose result never was, the
// result (checked out, or written by a trusted_local agent), else nothing
// for a sandboxed lease whose result was never checked out.
func (x *Execution) worktreeExpected() (plumbing.Hash, bool) {
	r := x.Lease.Result
	switch {
	case x.stagedAtBase() && !x.agentWroteWorktree():
		return mustTree(x.Repo, plumbing.NewHash(x.Lease.Base)), true
	case r != nil && r.Tree != "" && (x.Lease.holdsResult() || x.agentWroteWorktree()):
		return plumbing.NewHash(r.Tree), true
	case !x.agentWroteWorktree():
		return refs.EmptyTree, true
	}
	return plumbing.ZeroHash, false
}

type edits struct {
	commit plumbing.Hash
	paths  []string
}

// worktreeEdits hashes the review worktree (lstat only) and returns the
// differences from expected as a commit on top of the result, or nil.
// A review worktree that is not on disk (its runner died before adding
// it) holds no edits.
func (x *Execution) worktreeEdits(ctx context.Context, expected plumbing.Hash) (*edits, error) {
	if _, err := os.Lstat(x.Worktree()); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	entries, err := scan(ctx, sandbox.Delta{Root: x.Worktree(), Layout: sandbox.Full})
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Kind == sandbox.Special {
			return nil, fmt.Errorf("%s is a %s", e.Path, e.Kind)
		}
	}
	base := plumbing.NewHash(x.Lease.Base)
	if x.Lease.Result != nil && x.Lease.Result.Commit != "" {
		base = plumbing.NewHash(x.Lease.Result.Commit)
	}
	c, err := build(ctx, x.Repo, base, sandbox.Delta{Root: x.Worktree(), Layout: sandbox.Full}, entries)
	if err != nil {
		return nil, err
	}
	changes, err := x.Repo.DiffTrees(expected, c.Tree)
	if err != nil {
		return nil, err
	}
	// A base checked out while the agent worked may be partial (its runner
	// died during the checkout): a base file missing there is nobody's
	// edit, and git has it.
	partial := x.stagedAtBase() && !x.agentWroteWorktree()
	e := &edits{}
	for _, ch := range changes {
		if !(partial && ch.Status == "D") {
			e.paths = append(e.paths, ch.Path)
		}
	}
	if len(e.paths) == 0 {
		return nil, nil
	}
	e.commit, err = x.Repo.WriteCommit(c.Tree, []plumbing.Hash{base}, refs.BranchMessage(x.Lease.ID, "", "edits found in the review worktree at cleanup", "", ""))
	return e, err
}

// removeTree removes a directory tree, making its directories writable
// first (an agent may have made them read-only). It never follows symlinks.
func removeTree(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}

// discardedFile is the listing of a sandbox's delta that cleanup recorded
// before removing it: one line per entry, with each file's sha256.
const discardedFile = "cleanup/discarded.txt"

// recordDiscarded records, before the sandbox is removed, what the agent
// left in it that the log does not hold as a result (none yet, or a
// quarantined one): a listing of the delta with each file's sha256, as a
// log event, and a receipt item naming the listing's digest. keep is set
// when that could not be done: the sandbox then stays, and cleanup fails.
// A sandbox whose delta is elsewhere (a Crabbox box) or already gone
// records nothing.
func (x *Execution) recordDiscarded(ctx context.Context) (keep bool, item CleanupItem) {
	if r := x.Lease.Result; r != nil && r.Tree != "" && r.Status != ResultQuarantined {
		return false, item // the result holds it
	}
	p, err := providerByName(x.Lease.Provider, x.Lease.Policy)
	if err != nil {
		return false, item
	}
	if _, remote := p.(sandbox.Collector); remote {
		return false, item
	}
	spec := x.spec()
	item.Resource = "agent-work"
	d, err := p.Delta(spec)
	if err != nil {
		item.Action, item.Detail = ActionFailed, "reading what the agent left before removing it: "+err.Error()
		return true, item
	}
	if _, err := os.Lstat(d.Root); err != nil || d.Root == x.Worktree() {
		return false, CleanupItem{} // gone, or the review worktree (judged on its own)
	}
	entries, err := scan(ctx, d)
	if err == nil && len(entries) == 0 {
		return false, CleanupItem{}
	}
	var listing []byte
	if err == nil {
		listing, err = hashDelta(d, entries)
	}
	if err != nil {
		item.Action, item.Detail = ActionFailed, "listing what the agent left before removing it: "+err.Error()
		return true, item
	}
	sum := sha256.Sum256(listing)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	files := map[string][]byte{discardedFile: listing}
	if len(x.Lease.Credentials) > 0 {
		// Paths may hold a credential's value: keep only the digest
		// unless they can be redacted.
		_, secrets, err := x.credentialLeaks(d, entries, false)
		if err != nil || secrets == nil {
			files = nil
		} else {
			files[discardedFile] = secrets.bytes(listing)
		}
	}
	item.Action = ActionRecorded
	item.Detail = fmt.Sprintf("%d entries not in a result, discarded with the sandbox: %s", len(entries), digest)
	if files != nil {
		item.Detail += " (" + discardedFile + ")"
	}
	if prev := x.Lease.Cleanup; prev != nil {
		for _, p := range prev.Receipt {
			if p == item {
				return false, item // recorded by an earlier try
			}
		}
	}
	if err := x.Event(ctx, "cleanup-recorded", nil, files); err != nil {
		item.Action, item.Detail = ActionFailed, "recording what the agent left: "+err.Error()
		return true, item
	}
	return false, item
}

// hashDelta lists a delta's entries, each file with its content's sha256.
func hashDelta(d sandbox.Delta, entries []sandbox.Entry) ([]byte, error) {
	var b strings.Builder
	for _, e := range entries {
		sum := "-"
		if e.Kind == sandbox.File {
			f, err := sandbox.OpenEntry(d, e)
			if err != nil {
				return nil, err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return nil, err
			}
			sum = "sha256:" + hex.EncodeToString(h.Sum(nil))
		}
		fmt.Fprintf(&b, "%s %s %d %s %q\n", e.Kind, e.Mode, e.Size, sum, e.Path)
	}
	return []byte(b.String()), nil
}

// stopRunner confirms that the lease's runner is gone by the PID and start
// time it recorded (runner.json), whatever its supervisor says of its pane:
// a runner still alive is killed, with the sandbox that dies with it, and
// waited for. ok is false when there was none to stop (nothing to add to
// the receipt).
func (x *Execution) stopRunner(ctx context.Context) (item CleanupItem, ok bool) {
	r, _, alive := process.Runner(x.RunDir())
	if !alive {
		return item, false
	}
	item = CleanupItem{Resource: "runner", Detail: fmt.Sprintf("pid %d", r.PID)}
	if _, err := process.Stop(r.PID, r.StartTime, 2*time.Second); err != nil {
		item.Action, item.Detail = ActionFailed, fmt.Sprintf("the runner (pid %d) did not exit: %v", r.PID, err)
		return item, true
	}
	item.Action = ActionStopped
	return item, true
}
