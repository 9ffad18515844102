package gitlease

import (
	"context"
	"fmt"
	"os"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/sandbox/herdr"
)

// AdoptedProvider is the provider recorded for an agent someone started
// by hand: git-lease made no workspace for it.
const AdoptedProvider = "adopted"

// Adopt records an agent that someone started by hand in a Herdr pane as a
// trusted_local lease, with its worktree and branch as they are: the pane's
// working directory must be a checkout of this repository. The lease is
// running for as long as the pane runs its terminal; it is never called
// sandboxed, and git lease push leaves it out unless lease.shareTrustedLocal
// is true.
func Adopt(ctx context.Context, repo *refs.Repo, paneID, mission string) (*Execution, error) {
	if _, err := Signing(repo, os.Stderr); err != nil {
		return nil, err
	}
	sup, err := herdr.NewSupervisor(gitConfig(repo, "lease.herdrSession"), "git-lease", "")
	if err != nil {
		return nil, err
	}
	if err := sup.Check(ctx); err != nil {
		return nil, err
	}
	info, err := sup.Client.Get(ctx, paneID)
	if err != nil {
		return nil, err
	}
	wt, err := refs.Open(info.Cwd)
	if err != nil || wt.CommonDir != repo.CommonDir {
		return nil, fmt.Errorf("herdr pane %s works in %s, which is not a checkout of this repository", paneID, info.Cwd)
	}
	head, err := wt.ResolveCommit("HEAD")
	if err != nil {
		return nil, err
	}
	branch := wt.BranchOf("HEAD")
	if branch == "" {
		return nil, fmt.Errorf("herdr pane %s works on a detached HEAD: check out a branch there to adopt it", paneID)
	}
	id, err := newID(repo)
	if err != nil {
		return nil, err
	}
	eff, err := policy.Load(repo, head)
	if err != nil {
		return nil, err
	}
	e := sandbox.Endpoint{Supervisor: "herdr", PaneID: info.PaneID, TerminalID: info.TerminalID, Label: info.Label}
	x := &Execution{Repo: repo, Lease: &Lease{
		Version: RecordVersion, ID: id, Mode: TrustedLocal, Provider: AdoptedProvider, Base: head.String(), BaseRef: branch,
		Branch: branch[len("refs/heads/"):], Mission: mission, Command: []string{"(started by hand in herdr pane " + info.PaneID + ")"},
		CreatedAt: repo.Now(), Policy: eff, PolicyDigest: eff.Digest(), Supervisor: &e,
	}}
	if err := x.Move(ctx, Provisioning, nil, nil); err != nil {
		return nil, err
	}
	receipts := []Receipt{{Kind: "provider", Name: AdoptedProvider, ID: "lease-" + string(id), Detail: "not sandboxed: an agent started by hand"}, endpointReceipt(e)}
	return x, x.Move(ctx, Running, func(l *Lease) { l.Receipts = receipts; l.Enforcement = "none (adopted: started by hand)" }, nil)
}
