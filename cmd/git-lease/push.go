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

func runPush(ctx context.Context, args []string, all bool) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	remote, prefixes := remoteAndIDs(ctx, repo, args)
	rep, err := gitlease.Push(ctx, repo, remote, prefixes, all)
	if err != nil {
		return err
	}
	for _, s := range slices.Sorted(maps.Keys(rep.Kept)) {
		fmt.Fprintf(os.Stderr, "git-lease: not pushing %d %s lease(s): name them, or git lease push --all\n", rep.Kept[s], s)
	}
	for _, x := range rep.Withheld {
		fmt.Fprintf(os.Stderr, "git-lease: not pushing lease %s: it is trusted_local (it ran unsandboxed, as you); git config lease.shareTrustedLocal true shares such leases\n", x.Lease.ID)
	}
	if len(rep.Pushed) == 0 {
		fmt.Fprintln(os.Stderr, "git-lease: no lease to push")
		return nil
	}
	for _, x := range rep.Pushed {
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
