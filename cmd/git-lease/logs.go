package main

import (
	"os"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/urfave/cli/v2"
)

// rawFlag is for logs and diff, whose text the agent wrote.
var rawFlag = &cli.BoolFlag{Name: "raw", Usage: "write the stored bytes unchanged, terminal controls included"}

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print the agent's output",
		ArgsUsage: "ID",
		Description: `Logs prints the agent's output: live while it runs, afterwards the bounded
copy kept in the lease log (the head and the tail, the middle elided with a
count). Terminal controls in it (ESC, C1 and bidi controls, invalid UTF-8)
are printed as escapes such as \x1b and \u202e; --raw writes the bytes as
they are.

Example:
   git lease logs 3f9c
   git lease logs --check 1 3f9c
   git lease logs --raw 3f9c > agent.log`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "check", Usage: "print the log of check N instead"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing while the agent runs"},
			rawFlag,
		},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			raw := c.Bool("raw")
			if c.Bool("follow") && raw {
				return gitlease.Follow(c.Context, x, os.Stdout)
			}
			if c.Bool("follow") {
				w := escape.NewWriter(os.Stdout)
				defer w.Close()
				return gitlease.Follow(c.Context, x, w)
			}
			var b []byte
			if n := c.Int("check"); n > 0 {
				b, err = x.CheckLog(n)
			} else {
				b, err = x.Output()
			}
			if err != nil {
				return err
			}
			if !raw {
				b = escape.Text(b)
			}
			_, err = os.Stdout.Write(b)
			return err
		},
	}
}
