package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
)

func revokeCommand() *cli.Command {
	return &cli.Command{
		Name:  "revoke",
		Usage: "refuse new leases in this repository (or for a mission) until lifted",
		Description: `Revoke records a signed decision in refs/lease-revocations/log: from then on
git lease start refuses, saying who revoked, when, why and how to lift it.
--mission M revokes only the leases of mission M (git lease start --mission M,
and the children of its leases). For the leases already running, --let-finish
(the default) lets them finish; --cancel cancels each as git lease cancel
would. The decision travels with git lease push and fetch: a clone that has
fetched it refuses too. git lease unrevoke lifts it.

To revoke every repository of yours, set revoke.reason in your trusted policy.

Example:
   git lease revoke --reason 'leaked token, rotating' --cancel
   git lease revoke --mission TICKET-42 --reason 'scope changed'
   git lease unrevoke`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why: every refused start prints it"},
			&cli.StringFlag{Name: "mission", Usage: "revoke only the leases of this mission"},
			&cli.BoolFlag{Name: "cancel", Usage: "cancel the running leases in scope"},
			&cli.BoolFlag{Name: "let-finish", Usage: "let the running leases finish (the default)"},
			&cli.DurationFlag{Name: "grace", Value: gitlease.CancelGrace, Usage: "with --cancel, how long each agent has to stop after the interrupt"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("revoke takes no arguments: give the reason with --reason")
			}
			if c.Bool("cancel") && c.Bool("let-finish") {
				return usagef("give --cancel or --let-finish, not both")
			}
			policy := gitlease.PolicyLetFinish
			if c.Bool("cancel") {
				policy = gitlease.PolicyCancel
			}
			repo, err := openRepo()
			if err != nil {
				return err
			}
			out, err := gitlease.Revoke(c.Context, repo, gitlease.RevokeOptions{
				Mission: c.String("mission"), Reason: c.String("reason"), Policy: policy,
				Grace: c.Duration("grace"), Progress: os.Stderr,
			})
			if out == nil {
				return err
			}
			if c.Bool("json") {
				printJSON(os.Stdout, out)
				return err
			}
			r := out.Revocation
			fmt.Printf("revoked %s (%s): %s\n", r.Scope(), r.Policy, escape.Line(r.Reason))
			for _, id := range out.Canceled {
				fmt.Printf("  canceled     %s\n", id)
			}
			for _, run := range out.Running {
				fmt.Printf("  still running %s: %s\n", run.ID, escape.Line(run.Why))
			}
			return err
		},
	}
}

func unrevokeCommand() *cli.Command {
	return &cli.Command{
		Name:  "unrevoke",
		Usage: "lift a revocation: new leases may start again",
		Description: `Unrevoke records a signed decision in refs/lease-revocations/log that lifts
the revocation of this repository, or with --mission M, of mission M.

Example:
   git lease unrevoke
   git lease unrevoke --mission TICKET-42`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mission", Usage: "lift the revocation of this mission"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unrevoke takes no arguments")
			}
			repo, err := openRepo()
			if err != nil {
				return err
			}
			r, err := gitlease.Unrevoke(c.Context, repo, c.String("mission"), os.Stderr)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(os.Stdout, r)
			}
			fmt.Printf("lifted the revocation of %s\n", r.Scope())
			return nil
		},
	}
}
