package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
)

func importCommand() *cli.Command {
	return &cli.Command{
		Name:  "import",
		Usage: "make a lease of the changes an agent left in an AgentFS database elsewhere",
		Description: `Import reads the delta database that AgentFS made for an agent elsewhere (for
example agentfs run on macOS leaves ~/.agentfs/run/<session>/delta.db) over the
base it ran on, and takes its changes through the same collection,
verification and review as a lease that ran here. The agent did not run in a
git-lease sandbox: the lease is trusted_local, and is never called sandboxed.
Its database is kept with the lease, and cleanup names it.

Example:
   git lease import --agentfs delta.db --base main --mission TICKET-7`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agentfs", Usage: "the AgentFS delta database (required)"},
			&cli.StringFlag{Name: "base", Usage: "the revision the agent's directory was a checkout of (required)"},
			&cli.StringFlag{Name: "mission", Usage: "the mission (task, ticket) the agent served"},
			jsonFlag,
		},
		ArgsUsage: "--agentfs FILE.db --base REV",
		Action: func(c *cli.Context) error {
			if c.String("agentfs") == "" || c.String("base") == "" {
				return usagef("--agentfs and --base are required\nusage: git lease import --agentfs FILE.db --base REV [--mission M]")
			}
			repo, err := openRepo()
			if err != nil {
				return err
			}
			x, err := gitlease.Import(c.Context, repo, gitlease.ImportOptions{
				Database: c.String("agentfs"), Base: c.String("base"), Mission: c.String("mission"), Progress: os.Stderr,
			})
			if x == nil {
				return err
			}
			if c.Bool("json") {
				if err := printJSON(os.Stdout, toJSON(x)); err != nil {
					return err
				}
			} else {
				fmt.Println(x.Lease.ID)
			}
			return err
		},
	}
}
