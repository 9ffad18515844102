package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
)

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "move a branch to a lease's verified result (a fast-forward; never forced)",
		ArgsUsage: "ID",
		Description: `Apply verifies the result again, then in one git update-ref transaction checks
that the target branch (--onto, else the branch the base came from) is still at
the lease's base, moves it to the result commit and records applied in the lease
log. If the branch moved, it refuses and suggests git lease rebase. If the branch
is checked out here, your checkout must be clean and is updated as
git merge --ff-only would; a branch checked out elsewhere is refused. Hooks do
not run. --only PATH… promotes just those changes as a new, verified commit,
recorded with its own manifest; it also takes the part of a quarantined result
that no finding names. A result whose findings policy lets wait for you
(result.accept_at_apply: protected paths) needs --accept, recorded in the log.
Without --message, the commit that lands is the result's, whose message is the
lease's mission and the result's summary. --message commits the result's tree
again, by you, with your message (and a Lease-ID trailer); so does apply of a result collected where git had no
identity, with the result's message. Apply refuses to make a commit while git
has no identity (git config user.name and user.email).

Example:
   git lease apply 3f9c
   git lease apply 3f9c --onto release --only src/parser.go
   git lease apply 3f9c --message "parser: accept trailing commas"`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "onto", Usage: "the branch to move (default: the branch the base came from)"},
			&cli.StringSliceFlag{Name: "only", Usage: "promote only this path or directory of the result (repeatable)"},
			&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "the applied commit's message (the result's tree, committed again by you)"},
			&cli.BoolFlag{Name: "accept", Usage: "accept the findings that policy's result.accept_at_apply lets wait for you (protected paths), after reviewing them"},
		},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			if err := gitlease.Apply(c.Context, x, gitlease.ApplyOptions{Onto: c.String("onto"), Only: c.StringSlice("only"), Accept: c.Bool("accept"), Message: c.String("message")}); err != nil {
				return err
			}
			a := x.Lease.Applied
			what := "the result"
			if len(a.Paths) > 0 {
				what = fmt.Sprintf("%d promoted change(s)", len(a.Paths))
			}
			fmt.Fprintf(os.Stderr, "lease %s: applied %s: %s %s..%s\n", x.Lease.ID, what,
				strings.TrimPrefix(a.Target, "refs/heads/"), a.From[:12], a.Commit[:12])
			return nil
		},
	}
}
