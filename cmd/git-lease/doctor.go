package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
)

var errBroken = errors.New("some lease logs cannot be read: git lease gc --broken removes them")

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "list the lease logs git-lease cannot read",
		Description: `Doctor lists each lease log under refs/leases that git-lease cannot read (no
lease.json in its newest commit, a record that does not parse or names another
lease), which every other command leaves out, and each record written by a
newer git-lease, which is shown read-only. Exit 1 when a log cannot be read;
git lease gc --broken removes those.

Example:
   git lease doctor --json`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("doctor takes no arguments")
			}
			repo, err := openRepo()
			if err != nil {
				return err
			}
			all, broken, err := gitlease.ListAll(repo)
			if err != nil {
				return err
			}
			newer := []string{}
			for _, x := range all {
				if x.ReadOnly() {
					newer = append(newer, string(x.Lease.ID))
				}
			}
			if c.Bool("json") {
				if broken == nil {
					broken = []gitlease.Broken{}
				}
				if err := printJSON(os.Stdout, struct {
					Broken []gitlease.Broken `json:"broken"`
					Newer  []string          `json:"newer"`
				}{broken, newer}); err != nil {
					return err
				}
			} else {
				for _, b := range broken {
					fmt.Printf("broken\t%s\tlog %s: %s\n", b.ID, b.Log[:12], escape.Line(b.Reason))
				}
				for _, id := range newer {
					fmt.Printf("newer\t%s\twritten by a newer git-lease: read-only\n", id)
				}
				if len(broken) == 0 && len(newer) == 0 {
					fmt.Printf("%d leases, all readable\n", len(all))
				}
			}
			if len(broken) > 0 {
				return errBroken
			}
			return nil
		},
	}
}
