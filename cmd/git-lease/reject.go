package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
)

func rejectCommand() *cli.Command {
	return &cli.Command{
		Name:      "reject",
		Usage:     "record that leases' results will not be applied",
		ArgsUsage: "ID… | --state review",
		Description: `Reject records the decision in each lease's log. The result, its branch and its
log stay for history; git lease cleanup removes the runtime resources. Only a
lease in review can be rejected: one that is not is named, the others are
still rejected, and the command fails.

Example:
   git lease reject 3f9c --reason "wrong approach"
   git lease reject --state review --reason "starting over"`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, for the record"}, stateFlag},
		Action: func(c *cli.Context) error {
			repo, err := openRepo()
			if err != nil {
				return err
			}
			leases, err := pickLeases(c, repo, "lease IDs or --state review")
			if err != nil {
				return err
			}
			refused := 0
			for _, x := range leases {
				if err := gitlease.Reject(c.Context, x, c.String("reason")); err != nil {
					if len(leases) == 1 {
						return err
					}
					fmt.Fprintf(os.Stderr, "git-lease: %v\n", err)
					refused++
					continue
				}
				fmt.Fprintf(os.Stderr, "lease %s: rejected: %s (kept: the result on %s and the log; git lease cleanup removes the rest)\n",
					x.Lease.ID, escape.Line(x.Lease.Reason), x.Lease.Branch)
			}
			if refused > 0 {
				return fmt.Errorf("%d of %d leases not rejected", refused, len(leases))
			}
			return nil
		},
	}
}
