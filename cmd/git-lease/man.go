package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// manCommand prints the man page that scripts/install.sh installs, because
// git answers `git lease --help` with `man git-lease`.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:   "man",
		Usage:  "print git-lease's man page (roff)",
		Hidden: true,
		Action: func(c *cli.Context) error {
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return err
			}
			fmt.Fprint(c.App.Writer, page)
			return nil
		},
	}
}
