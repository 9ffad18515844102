package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
)

func rebaseCommand() *cli.Command {
	return &cli.Command{
		Name:      "rebase",
		Usage:     "re-make a lease's change on its branch's new head, as a new lease",
		ArgsUsage: "ID",
		Description: `Rebase merges the lease's change onto the target branch's current head (a
three-way merge of trees with git merge-tree; no work tree is touched) and
records the result as a new lease, rebased_from the old one, which needs its own
review and apply. Conflicts are listed and recorded on the old lease, which
stays in review; nothing is materialized.

Example:
   git lease rebase 3f9c`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "onto", Usage: "the branch to rebase onto (default: the branch the base came from)"}, jsonFlag},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			y, err := gitlease.Rebase(c.Context, x, c.String("onto"), progress)
			if y == nil {
				return err
			}
			if c.Bool("json") {
				printJSON(os.Stdout, toJSON(y))
			} else {
				fmt.Println(y.Lease.ID)
			}
			if err != nil {
				return err
			}
			if y.Lease.State != gitlease.Review {
				return errLeaseFailed
			}
			return nil
		},
	}
}
