package main

import (
	"os"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/urfave/cli/v2"
)

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print the agent's output",
		ArgsUsage: "ID",
		Description: `Logs prints the agent's output: live while it runs, afterwards the bounded
copy kept in the lease log (the head and the tail, the middle elided with a
count).

Example:
   git lease logs 3f9c
   git lease logs --check 1 3f9c`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "check", Usage: "print the log of check N instead"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing while the agent runs"},
		},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			if c.Bool("follow") {
				return gitlease.Follow(c.Context, x, os.Stdout)
			}
			var out []byte
			if n := c.Int("check"); n > 0 {
				out, err = x.CheckLog(n)
			} else {
				out, err = x.Output()
			}
			if err != nil {
				return err
			}
			_, err = os.Stdout.Write(out)
			return err
		},
	}
}
