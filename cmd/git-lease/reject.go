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
		Usage:     "record that a lease's result will not be applied",
		ArgsUsage: "ID",
		Description: `Reject records the decision in the lease log. The result, its branch and its
log stay for history; git lease cleanup removes the runtime resources.

Example:
   git lease reject 3f9c --reason "wrong approach"`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, for the record"}},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			if err := gitlease.Reject(c.Context, x, c.String("reason")); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "lease %s: rejected: %s\n", x.Lease.ID, escape.Line(x.Lease.Reason))
			return nil
		},
	}
}
