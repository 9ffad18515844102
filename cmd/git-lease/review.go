package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
)

var errReviewMismatch = errors.New("review: what you look at is not what the lease recorded")

func reviewCommand() *cli.Command {
	return &cli.Command{
		Name:      "review",
		Usage:     "check that the review branch and worktree are exactly the recorded result",
		ArgsUsage: "ID",
		Description: `Review re-derives the result from the lease log alone: it checks the patch
against its digest and the manifest, applies the patch to the base in a private
index and compares the tree with the recorded result, the result commit and the
review branch, and hashes the review worktree's files against it. It exits 1
when anything differs, and lists what.

Example:
   git lease review 3f9c`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			rep, err := gitlease.CheckReview(c.Context, x)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				printJSON(os.Stdout, rep)
			} else {
				for _, what := range rep.Checked {
					fmt.Printf("checked: %s\n", what)
				}
				for _, p := range rep.Problems {
					fmt.Printf("MISMATCH: %s\n", escape.Line(p))
				}
				for _, d := range rep.Worktree {
					fmt.Printf("  worktree %s\n", escape.Line(d))
				}
				if rep.Match {
					fmt.Printf("lease %s: the review branch and worktree are exactly the recorded result\n", rep.ID)
				}
			}
			if !rep.Match {
				return errReviewMismatch
			}
			return nil
		},
	}
}
