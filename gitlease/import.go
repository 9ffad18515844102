package gitlease

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/agentfs"
)

// ImportOptions are the inputs of git lease import --agentfs.
type ImportOptions struct {
	// Database is an AgentFS delta database made elsewhere (agentfs run's
	// delta.db), and Base the revision its base directory was a checkout of.
	Database, Base string
	Mission        string
	Progress       io.Writer
}

// Import makes a lease of a delta that an agent left in an AgentFS
// database elsewhere: the database is copied into the lease, read over an
// export of the base, and its result goes through the same collection,
// verification and review as any lease's. The agent did not run in a
// git-lease sandbox, so the lease is trusted_local, never called
// sandboxed (AgentFS's own sandbox on Linux is weaker than bwrap), and its
// provider is agentfs, so that cleanup keeps its database.
func Import(ctx context.Context, repo *refs.Repo, opts ImportOptions) (*Execution, error) {
	if _, err := Signing(repo, os.Stderr); err != nil {
		return nil, err
	}
	base, err := repo.ResolveCommit(opts.Base)
	if err != nil {
		return nil, err
	}
	eff, err := policy.Load(repo, base)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	provider := agentfs.Provider{Self: self, Imported: opts.Database}
	id, err := newID(repo)
	if err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	x := &Execution{Repo: repo, Lease: &Lease{
		Version: RecordVersion, ID: id, Mode: TrustedLocal, Provider: provider.Name(), Base: base.String(),
		BaseRef: repo.BranchOf(opts.Base), Branch: id.Branch(), Mission: opts.Mission,
		Command:   []string{"(imported from an AgentFS database made elsewhere)"},
		CreatedAt: repo.Now(), Policy: eff, PolicyDigest: eff.Digest(),
	}}
	unlock, err := x.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := x.Move(ctx, Provisioning, nil, nil, refs.RefUpdate{Name: id.BranchRef(), Old: plumbing.ZeroHash, New: base}); err != nil {
		os.RemoveAll(x.RunDir())
		return nil, err
	}
	fmt.Fprintf(progress, "lease %s: importing an AgentFS delta over %s\n", id, base.String()[:12])
	spec := x.spec()
	if err := provider.Create(ctx, spec); err != nil {
		return x, x.fail(ctx, fmt.Sprintf("import: %v", err), err)
	}
	// Its exit is not known here: the database is what it left.
	now := repo.Now()
	agent := &AgentRun{Exit: sandbox.Exit{Detail: "imported: the agent ran elsewhere, under AgentFS"}, StartedAt: now, EndedAt: now}
	receipt := Receipt{Kind: "provider", Name: provider.Name(), ID: "lease-" + string(id), Detail: "imported: the agent ran elsewhere, under AgentFS"}
	if err := x.Move(ctx, Collecting, func(l *Lease) {
		l.Receipts, l.Enforcement, l.Agent = []Receipt{receipt}, "none (imported: the agent ran elsewhere)", agent
	}, nil); err != nil {
		return x, err
	}
	d, err := provider.Delta(spec)
	if err != nil {
		return x, x.fail(ctx, fmt.Sprintf("collect: %v", err), err)
	}
	return x, x.collectAndVerify(ctx, d, progress)
}
