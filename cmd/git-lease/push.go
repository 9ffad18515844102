package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs"
)

func pushCommand() *cli.Command {
	return &cli.Command{
		Name:      "push",
		Usage:     "push leases (logs, review branches, notes) to a remote, all or nothing",
		ArgsUsage: "[REMOTE] [ID…]",
		Description: `Push sends refs/leases/ID, the review branch lease/ID and refs/notes/leases
to REMOTE in one atomic push: the remote takes all of them or none, and nothing
is ever forced. REMOTE defaults to the remote of the current branch's upstream,
else origin. Without IDs, the leases worth sharing are pushed: those to review
and those decided (review, quarantined, applied, rejected); --all adds failed,
canceled and unfinished ones, which an ID also names. A trusted_local lease ran
unsandboxed, as you, so it stays local unless git config
lease.shareTrustedLocal true. A server running git-lease's pre-receive hook
verifies every pushed lease and says why it refuses one.

Example:
   git lease push
   git lease push origin 3f9c`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "without IDs, push failed, canceled and unfinished leases too"}},
		Action: func(c *cli.Context) error {
			return runPush(c.Context, c.Args().Slice(), c.Bool("all"))
		},
	}
}

// worthSharing are the states of the leases git lease push sends when given
// no IDs: a result to review, or a decision on one.
var worthSharing = []gitlease.State{gitlease.Review, gitlease.Quarantined, gitlease.Applied, gitlease.Rejected}

func runPush(ctx context.Context, args []string, all bool) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	remote, prefixes := remoteAndIDs(ctx, repo, args)
	var leases []*gitlease.Execution
	if len(prefixes) == 0 {
		every, err := gitlease.List(repo)
		if err != nil {
			return err
		}
		kept := map[gitlease.State]int{}
		for _, x := range every {
			if all || slices.Contains(worthSharing, x.Lease.State) {
				leases = append(leases, x)
			} else {
				kept[x.Lease.State]++
			}
		}
		for _, s := range slices.Sorted(maps.Keys(kept)) {
			fmt.Fprintf(os.Stderr, "git-lease: not pushing %d %s lease(s): name them, or git lease push --all\n", kept[s], s)
		}
	}
	seen := map[refs.ID]bool{}
	for _, p := range prefixes {
		x, err := gitlease.LoadPrefix(repo, p)
		if err != nil {
			return err
		}
		if !seen[x.Lease.ID] {
			seen[x.Lease.ID] = true
			leases = append(leases, x)
		}
	}
	share, withheld, err := gitlease.Shareable(ctx, repo, leases)
	if err != nil {
		return err
	}
	for _, x := range withheld {
		fmt.Fprintf(os.Stderr, "git-lease: not pushing lease %s: it is trusted_local (it ran unsandboxed, as you); git config lease.shareTrustedLocal true shares such leases\n", x.Lease.ID)
	}
	if len(share) == 0 {
		fmt.Fprintln(os.Stderr, "git-lease: no lease to push")
		return nil
	}
	ids := make([]refs.ID, 0, len(share))
	for _, x := range share {
		ids = append(ids, x.Lease.ID)
	}
	if err := repo.PushLeases(ctx, remote, ids); err != nil {
		return err
	}
	for _, x := range share {
		fmt.Printf("lease %s: pushed to %s (%s)\n", x.Lease.ID, remote, x.Lease.State)
	}
	return nil
}

// remoteAndIDs splits [REMOTE] [ID…]: the first argument is the remote when
// it cannot be a lease ID prefix or names a configured remote; without it,
// the remote is the default one.
func remoteAndIDs(ctx context.Context, repo *refs.Repo, args []string) (string, []string) {
	if len(args) > 0 && (!refs.ValidPrefix(args[0]) || repo.IsRemote(ctx, args[0])) {
		return args[0], args[1:]
	}
	return repo.DefaultRemote(ctx), args
}
