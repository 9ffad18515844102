package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
)

func adoptCommand() *cli.Command {
	return &cli.Command{
		Name:  "adopt",
		Usage: "record an agent started by hand in a Herdr pane as a trusted_local lease",
		Description: `Adopt records the agent running in a Herdr pane as a lease, with its worktree
and branch as they are, so that git lease ls shows it and its mission. It is
trusted_local (it was not started in a sandbox, and is never called one), and
git lease push leaves it out unless git config lease.shareTrustedLocal is true.

Example:
   git lease adopt --pane w1:p2 --mission TICKET-7`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "pane", Usage: "the Herdr pane the agent runs in (required)"},
			&cli.StringFlag{Name: "mission", Usage: "the mission (task, ticket) the agent serves"},
			jsonFlag,
		},
		ArgsUsage: "--pane PANE",
		Action: func(c *cli.Context) error {
			if c.String("pane") == "" {
				return usagef("--pane is required: the Herdr pane the agent runs in\nusage: git lease adopt --pane PANE [--mission M]")
			}
			repo, err := openRepo()
			if err != nil {
				return err
			}
			x, err := gitlease.Adopt(c.Context, repo, c.String("pane"), c.String("mission"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(os.Stdout, toJSON(x))
			}
			fmt.Println(x.Lease.ID)
			fmt.Fprintf(os.Stderr, "lease %s: adopted herdr pane %s on %s (trusted_local: NOT sandboxed)\n", x.Lease.ID, c.String("pane"), x.Lease.Branch)
			return nil
		},
	}
}
