package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/hooks"
)

// hookCommand is what the hooks that git lease hooks install writes run;
// it is not for people, so it is hidden.
func hookCommand() *cli.Command {
	return &cli.Command{
		Name:            "hook",
		Hidden:          true,
		SkipFlagParsing: true,
		Usage:           "run by the git hooks that git lease hooks install writes",
		ArgsUsage:       "reference-transaction STATE | pre-receive",
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			switch {
			case len(args) == 2 && args[0] == hooks.LocalHook:
				return gitlease.GuardLeaseRefs(args[1], os.Stdin, openRepo)
			case len(args) == 1 && args[0] == hooks.ServerHook:
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				return gitlease.PreReceive(c.Context, wd, os.Environ(), os.Stdin, os.Stderr)
			}
			return usagef("hook takes reference-transaction STATE or pre-receive; git runs it from the hooks git lease hooks install writes")
		},
	}
}
