package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
)

func reconcileCommand() *cli.Command {
	return &cli.Command{
		Name:  "reconcile",
		Usage: "repair leases whose git-lease process crashed",
		Description: `Reconcile finds every lease whose state says a process is working on it while
no process holds its work lock, and repairs it by execution ID with the
resources it already has: interrupted provisioning and a vanished agent end
failed (worktree and sandbox kept for cleanup), interrupted collection,
verification and materialization resume, an apply cut short finishes updating
your checkout, and unconfirmed cleanups are retried. It never creates a second
sandbox, branch or worktree for one lease. Running it again changes nothing.

Example:
   git lease reconcile`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			repo, err := openRepo()
			if err != nil {
				return err
			}
			repairs, err := gitlease.Reconcile(c.Context, repo, gitlease.ReconcileOptions{Progress: progress})
			if c.Bool("json") {
				printJSON(os.Stdout, repairs)
			} else {
				for _, r := range repairs {
					fmt.Printf("lease %s: %s (now %s)\n", r.ID, r.Action, r.State)
				}
				if len(repairs) == 0 && err == nil {
					fmt.Println("nothing to repair")
				}
			}
			return err
		},
	}
}
