package gitlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/agentfs"
	"github.com/git-lease/git-lease/sandbox/bwrap"
	"github.com/git-lease/git-lease/sandbox/headless"
	"github.com/git-lease/git-lease/sandbox/worktree"
	"github.com/git-lease/git-lease/verify"
)

// StartOptions are the inputs of git lease start.
type StartOptions struct {
	Mode    Mode
	Base    string // revision; "" means HEAD
	Mission string
	// Parent makes the lease a child of that lease (an ID or a unique
	// prefix): recorded in both logs, in the parent's mission.
	Parent string
	// ReadOnly runs the agent on its base with /work read-only (bwrap
	// only): a reviewer or a test runner, whose output is its evidence.
	ReadOnly bool
	// Snapshot makes the checkout's uncommitted changes an explicit
	// snapshot commit on top of HEAD and uses it as the base.
	Snapshot bool
	// Checks are extra check commands; Artifacts, workspace files to keep.
	Checks    []string
	Artifacts []string
	Command   []string
	// Prompt is given to the agent on its standard input (and in
	// $LEASE_PROMPT_FILE) once every identity of the lease is recorded, or
	// in its command when an agent preset's command says {prompt}.
	Prompt        string
	PrivatePrompt bool // record only the prompt's digest
	TTY           bool // run the agent on a pseudo-terminal
	// Supervisor is headless (the default) or herdr; Detach returns as soon
	// as the agent runs, leaving it to its runner.
	Supervisor string
	Detach     bool
	// Agent names an agent preset (see Agents), which gives the command and
	// the destinations and credentials its agent uses, instead of Command.
	Agent string
	// Net picks the lease's destinations from its allowlist; Credentials
	// asks for credentials that policy allows. Sandboxed leases only.
	Net         []string
	Credentials []string
	// Output receives the agent's output live (nil: discarded).
	Output io.Writer
	// Progress receives one line per step (nil: discarded).
	Progress io.Writer
	// Gate, when set, gates a bwrap start on a passing feasibility gate
	// record for its setup (see requireGate). The command line always sets
	// it; in-process callers (this package's tests) test the sandbox itself.
	Gate *GateCheck
}

// Start provisions a lease, runs the agent and collects its result, in the
// order the lifecycle needs: persist provisioning with the resolved base and the
// review branch, add the review worktree, set up the sandbox with the agent
// held at its gate, record the sandbox, release the agent, collect. An
// error before the first log entry leaves nothing behind; after it, the
// lease records what went wrong and the execution is returned with it.
func Start(ctx context.Context, repo *refs.Repo, opts StartOptions) (*Execution, error) {
	if len(opts.Command) == 0 && opts.Agent == "" {
		return nil, errors.New("no agent command: give it after --, as in git lease start -- make fix")
	}
	if len(opts.Command) > 0 && opts.Agent != "" {
		return nil, fmt.Errorf("--agent %s gives the agent's command: give either --agent or a command after --", opts.Agent)
	}
	if _, err := Signing(repo, os.Stderr); err != nil {
		return nil, err
	}
	if _, err := Reconcile(ctx, repo, ReconcileOptions{Quick: true, Progress: opts.Progress}); err != nil {
		return nil, err
	}
	var parent *Execution
	if opts.Parent != "" {
		p, err := parentOf(repo, opts.Parent, opts.Mission)
		if err != nil {
			return nil, err
		}
		parent, opts.Mission = p, p.Lease.Mission
	}
	rev := opts.Base
	if rev == "" {
		rev = "HEAD"
	}
	base, err := repo.ResolveCommit(rev)
	if err != nil && opts.Base == "" {
		if head, _ := repo.Ref("HEAD"); head.IsZero() {
			return nil, errors.New("this repository has no commits yet: a lease starts from a commit, so commit something first")
		}
	}
	if err != nil {
		return nil, err
	}
	var snapshotOf string
	if opts.Snapshot {
		if opts.Base != "" && opts.Base != "HEAD" {
			return nil, errors.New("--snapshot records the checkout's changes on top of HEAD: it cannot be combined with --base")
		}
		snapshotOf = base.String()
		base, err = repo.Snapshot(ctx, refs.SnapshotMessage(snapshotOf))
		if err != nil {
			return nil, err
		}
	}
	dir, err := startDir(repo, base)
	if err != nil {
		return nil, err
	}
	eff, err := policy.LoadForAgent(repo, base, opts.Agent)
	if err != nil {
		return nil, err
	}
	if err := checkRevoked(repo, eff, opts.Mission); err != nil {
		return nil, err
	}
	provider, err := providerFor(opts.Mode, eff)
	if err != nil {
		return nil, err
	}
	if err := provider.Check(); err != nil {
		return nil, err
	}
	if opts.ReadOnly && provider.Name() != "bwrap" {
		return nil, fmt.Errorf("--read-only needs the bwrap provider, which mounts /work read-only; this lease's is %s", provider.Name())
	}
	command, creds, err := prepareLaunch(eff, opts, provider.Sandboxed())
	if err != nil {
		return nil, err
	}
	// The agent's program must be where the lease will run it; a provider
	// that collects the delta from elsewhere (a Crabbox box) runs it there.
	if _, remote := provider.(sandbox.Collector); !remote {
		prog, err := findAgent(command[0], eff.ReadOnly, provider.Sandboxed())
		if err != nil {
			return nil, err
		}
		if err := checkInstallDirs(repo, prog.Binds); err != nil {
			return nil, err
		}
	}
	sup, err := supervisorFor(repo, opts.Supervisor, "")
	if err != nil {
		return nil, err
	}
	if err := sup.Check(ctx); err != nil {
		return nil, err
	}
	if err := checkReadOnly(repo, eff.ReadOnly); err != nil {
		return nil, err
	}
	if opts.Gate != nil && provider.Name() == "bwrap" {
		if err := requireGate(ctx, repo, provider.Name(), sup, eff, *opts.Gate); err != nil {
			return nil, err
		}
	}
	id, err := newID(repo)
	if err != nil {
		return nil, err
	}
	now := repo.Now()
	x := &Execution{Repo: repo, Lease: &Lease{
		Version: RecordVersion, ID: id, Mode: opts.Mode, Sandboxed: provider.Sandboxed(), Provider: provider.Name(),
		Base: base.String(), BaseRef: repo.BranchOf(rev), Branch: id.Branch(), Mission: opts.Mission, Parent: parentID(parent), ReadOnlyWork: opts.ReadOnly,
		Command: command, Dir: dir, CreatedAt: now, Policy: eff, PolicyDigest: eff.Digest(), SnapshotOf: snapshotOf,
		Prompt: startPrompt(opts),
		Checks: opts.Checks, Artifacts: opts.Artifacts, AgentPreset: opts.Agent, Credentials: creds,
	}}
	if p := eff.Agent(); p != nil {
		x.Lease.AgentEnv, x.Lease.AgentHomeFiles = p.EnvNames(), p.HomePaths()
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	// The work lock is taken before the lease exists, so that reconcile
	// never mistakes this start for a crashed one.
	unlock, err := x.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	err = x.Move(ctx, Provisioning, nil, nil, refs.RefUpdate{Name: id.BranchRef(), Old: plumbing.ZeroHash, New: base})
	if err != nil {
		os.RemoveAll(x.RunDir())
		return nil, err
	}
	fmt.Fprintf(progress, "lease %s: provisioning %s lease on %s\n", id, x.Lease.Mode, base.String()[:12])
	if parent != nil {
		if err := parent.addChild(ctx, id); err != nil {
			return x, x.fail(ctx, fmt.Sprintf("recording the child in its parent's log: %v", err), err)
		}
		fmt.Fprintf(progress, "lease %s: a child of lease %s\n", id, parent.Lease.ID)
	}
	if repo.Prefix != dir {
		fmt.Fprintf(progress, "lease %s: %s/ is not a directory of the base: the agent starts at the top of the tree\n", id, repo.Prefix)
	}
	if opts.Agent == "" {
		for _, arg := range uncommitted(repo, base, dir, opts.Command) {
			fmt.Fprintf(progress, "lease %s: %s is in your checkout but not in the base: the agent sees only committed files (commit it, or start with --snapshot)\n", id, arg)
		}
	}
	// A revocation recorded since the check above: revoke lists the
	// running leases only after recording itself, so a start that recorded
	// its lease before that is canceled by it, and one after is stopped here.
	if err := checkRevoked(repo, eff, opts.Mission); err != nil {
		return x, x.fail(ctx, err.Error(), err)
	}
	fault("start:provisioning")
	if opts.Prompt != "" {
		if err := os.WriteFile(x.promptPath(), []byte(opts.Prompt), 0o644); err != nil {
			return x, x.fail(ctx, err.Error(), err)
		}
	}
	if err := x.prepare(ctx, provider, progress); err != nil {
		return x, err
	}
	if sup, err = supervisorFor(repo, sup.Name(), x.RunDir()); err != nil {
		return x, x.fail(ctx, err.Error(), err)
	}
	if h, ok := sup.(headless.Supervisor); ok && !opts.Detach {
		// The command itself is the runner.
		return x, x.runAgent(ctx, provider, sup, h.Endpoint(string(id)), opts.Output, progress)
	}
	if err := x.handOff(ctx, sup); err != nil {
		return x, err
	}
	unlock()
	return x, x.awaitRunner(ctx, sup, !opts.Detach, progress)
}

// uncommitted lists the arguments of command that name a file in the
// checkout (from the directory start runs in) that the base does not hold
// at dir: a script the agent was to run that was never committed.
func uncommitted(repo *refs.Repo, base plumbing.Hash, dir string, command []string) []string {
	c, err := repo.Commit(base)
	if err != nil || repo.WorkTree == "" {
		return nil
	}
	t, err := repo.Tree(c.TreeHash)
	if err != nil {
		return nil
	}
	var out []string
	for _, arg := range command {
		if arg == "" || strings.HasPrefix(arg, "-") || filepath.IsAbs(arg) || strings.ContainsAny(arg, "=\n") {
			continue
		}
		rel := path.Clean(filepath.ToSlash(arg))
		if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(repo.WorkTree, repo.Prefix, filepath.FromSlash(rel))); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if _, err := t.FindEntry(path.Join(dir, rel)); err != nil {
			out = append(out, arg)
		}
	}
	return out
}

// startDir is where the agent starts: the directory git lease start runs
// in, as git commands work from anywhere in a checkout, when the base has
// it as a directory under a plain path; else the top of the tree ("").
func startDir(repo *refs.Repo, base plumbing.Hash) (string, error) {
	if repo.Prefix == "" || verify.CheckPath(repo.Prefix) != nil {
		return "", nil
	}
	c, err := repo.Commit(base)
	if err != nil {
		return "", err
	}
	entries, err := repo.DirEntries(c.TreeHash, repo.Prefix)
	if err != nil || len(entries) == 0 {
		return "", err
	}
	return repo.Prefix, nil
}

// newID picks an unused ID: no log, no branch, no worktree directory.
func newID(repo *refs.Repo) (refs.ID, error) {
	return refs.NewID(func(id refs.ID) bool {
		h, _ := repo.Ref(id.LogRef())
		b, _ := repo.Ref(id.BranchRef())
		_, statErr := os.Lstat(repo.LeaseDir("worktrees", string(id)))
		return !h.IsZero() || !b.IsZero() || statErr == nil
	})
}

// providerFor picks the provider of a mode. Sandboxed mode never falls back
// to an unsandboxed provider.
func providerFor(mode Mode, eff *policy.Effective) (sandbox.Provider, error) {
	switch mode {
	case TrustedLocal:
		return worktree.Provider{}, nil
	case Sandboxed:
		if eff.Provider == "worktree" {
			return nil, fmt.Errorf("provider = worktree (%s) is not a sandbox: use --mode trusted_local to run without one", eff.Sources["provider"])
		}
		p, err := providerByName(eff.Provider, eff)
		if err != nil {
			return nil, fmt.Errorf("provider = %q (%s): %w", eff.Provider, eff.Sources["provider"], err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown mode %q: use sandboxed or trusted_local", mode)
}

// providerByName is the provider a lease records, built from the lease's
// recorded policy, for the commands that act on it later (cleanup,
// reconcile).
func providerByName(name string, eff *policy.Effective) (sandbox.Provider, error) {
	switch name {
	case "worktree", AdoptedProvider:
		return worktree.Provider{}, nil
	case "bwrap":
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		return bwrap.Provider{Self: self}, nil
	case "agentfs":
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		return agentfs.Provider{Self: self}, nil
	case "crabbox":
		if eff == nil {
			return nil, errors.New("the lease records no policy to build its crabbox provider from")
		}
		return crabboxProvider(eff), nil
	}
	return nil, fmt.Errorf("no sandbox provider named %q (known: agentfs, bwrap, crabbox, worktree)", name)
}

// checkReadOnly refuses read-only paths that would hand the agent the
// checkout, the repository, the user's home or any .git directory.
func checkReadOnly(repo *refs.Repo, paths []string) error {
	home, _ := os.UserHomeDir()
	for _, p := range paths {
		for _, forbidden := range []string{repo.WorkTree, repo.CommonDir, home} {
			if forbidden == "" {
				continue
			}
			if p == forbidden || strings.HasPrefix(forbidden, p+"/") || strings.HasPrefix(p, forbidden+"/") || p == "/" {
				return fmt.Errorf("read_only = %q would expose %s to the agent: name a narrower directory", p, forbidden)
			}
		}
		if slices.Contains(strings.Split(p, "/"), ".git") {
			return fmt.Errorf("read_only = %q exposes a .git directory: name a directory outside any repository", p)
		}
	}
	return nil
}

// checkInstallDirs refuses an agent's install directories under the home
// (see findAgent) that would hand the agent the checkout, the repository
// or a .git directory.
func checkInstallDirs(repo *refs.Repo, dirs []string) error {
	for _, d := range dirs {
		for _, forbidden := range []string{repo.WorkTree, repo.CommonDir} {
			if forbidden != "" && (d == forbidden || strings.HasPrefix(forbidden, d+"/") || strings.HasPrefix(d, forbidden+"/")) {
				return fmt.Errorf("the agent is installed in %s, which would expose %s to the agent: install it apart from the repository", d, forbidden)
			}
		}
		if slices.Contains(strings.Split(d, "/"), ".git") {
			return fmt.Errorf("the agent is installed in %s, inside a .git directory: install it elsewhere", d)
		}
	}
	return nil
}

// spec is the sandbox spec of this lease.
func (x *Execution) spec() sandbox.Spec {
	lim := x.Lease.Policy.Limits
	base := plumbing.NewHash(x.Lease.Base)
	tree := ""
	if c, err := x.Repo.Commit(base); err == nil {
		tree = c.TreeHash.String()
	}
	spec := sandbox.Spec{
		ID:       string(x.Lease.ID),
		Dir:      filepath.Join(x.RunDir(), "sandbox"),
		Worktree: x.Worktree(),
		BaseTree: tree,
		BasesDir: x.Repo.LeaseDir("bases"),
		ExportBase: func(dir string) error {
			return x.Repo.ExportTree(plumbing.NewHash(tree), dir)
		},
		ExportLayer: func(from, dir string, marks sandbox.LayerMarks) error {
			return x.Repo.ExportLayer(plumbing.NewHash(from), plumbing.NewHash(tree), dir, marks)
		},
		Distance: func(from string) (int, error) {
			return treeDistance(x.Repo, plumbing.NewHash(from), plumbing.NewHash(tree))
		},
		ReadOnly:               x.Lease.Policy.ReadOnly,
		ReadOnlyWork:           x.Lease.ReadOnlyWork,
		SeccompAllow:           x.Lease.Policy.Bwrap.SeccompAllow,
		RequireEscapeRecording: x.Lease.Policy.Bwrap.RequireRecording,
		RecordOpens:            x.Lease.Policy.Bwrap.RecordOpens,
		Limits: sandbox.Limits{
			Wall: time.Duration(lim.Wall), CPU: time.Duration(lim.CPU), MemoryBytes: int64(lim.Memory),
			Processes: lim.Processes, DiskBytes: int64(lim.Disk), OutputBytes: int64(lim.Output),
			RequireCgroup: lim.RequireCgroup,
		},
	}
	if len(x.Lease.Policy.Caches) > 0 {
		spec.Caches, spec.CachesDir = cacheNames(x.Lease.Policy.Caches), cacheDir(x.Repo)
	}
	return spec
}

// treeDistance is the number of paths that differ between two trees.
func treeDistance(repo *refs.Repo, a, b plumbing.Hash) (int, error) {
	changes, err := repo.DiffTrees(a, b)
	return len(changes), err
}

// prepare creates the sandbox, and for a trusted_local lease the review
// worktree its agent works in: the part of provisioning done by the
// command that starts the lease. A sandboxed lease's review worktree is
// added when its result is checked out (see addWorktree). Exporting the
// base's files (for bwrap, once per base tree; for Crabbox, the seed of
// each box) is the one step that takes long, seconds for a large tree, so
// it says so.
func (x *Execution) prepare(ctx context.Context, provider sandbox.Provider, progress io.Writer) error {
	if !provider.Sandboxed() {
		if err := x.addWorktree(ctx); err != nil {
			return x.fail(ctx, fmt.Sprintf("review worktree: %v", err), err)
		}
	}
	spec := x.spec()
	export, layer := spec.ExportBase, spec.ExportLayer
	spec.ExportBase = func(dir string) error {
		fmt.Fprintf(progress, "lease %s: exporting the files of base tree %s\n", x.Lease.ID, spec.BaseTree[:12])
		return export(dir)
	}
	spec.ExportLayer = func(from, dir string, marks sandbox.LayerMarks) error {
		fmt.Fprintf(progress, "lease %s: exporting base tree %s as what changed since %s\n", x.Lease.ID, spec.BaseTree[:12], from[:12])
		return layer(from, dir, marks)
	}
	if err := provider.Create(ctx, spec); err != nil {
		return x.fail(ctx, fmt.Sprintf("sandbox: %v", err), err)
	}
	return nil
}

// failure says why an agent run counts as failed, or "" when it succeeded.
func (a *AgentRun) failure() string {
	switch {
	case a == nil:
		return "the agent did not run"
	case a.RunnerGone:
		return "the agent's runner vanished while it worked (" + a.Detail + "); the result is what it left"
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
