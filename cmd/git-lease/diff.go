package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease/escape"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "print the patch the host computed for a lease",
		ArgsUsage: "ID",
		Description: `Diff prints the canonical patch recorded in the lease log (result/patch.diff):
base against result. It works after cleanup, from the log alone. The files'
content is the agent's: terminal controls in it (ESC, C1 and bidi controls,
invalid UTF-8) are printed as escapes such as \x1b and \u202e; --raw writes
the patch exactly as its digest covers it, for git apply.

Example:
   git lease diff 3f9c | less
   git lease diff --raw 3f9c | git apply`,
		Flags: []cli.Flag{rawFlag},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			patch, err := x.Patch()
			if err != nil {
				return err
			}
			if !c.Bool("raw") {
				patch = escape.Text(patch)
			}
			_, err = os.Stdout.Write(patch)
			return err
		},
	}
}
