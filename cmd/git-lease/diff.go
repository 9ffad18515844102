package main

import (
	"os"

	"github.com/urfave/cli/v2"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "print the patch the host computed for a lease",
		ArgsUsage: "ID",
		Description: `Diff prints the canonical patch recorded in the lease log (result/patch.diff):
base against result, exactly what the patch digest covers. It works after
cleanup, from the log alone.

Example:
   git lease diff 3f9c | less`,
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			patch, err := x.Patch()
			if err != nil {
				return err
			}
			_, err = os.Stdout.Write(patch)
			return err
		},
	}
}
