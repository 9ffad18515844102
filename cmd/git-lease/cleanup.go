package main

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
)

func cleanupCommand() *cli.Command {
	return &cli.Command{
		Name:      "cleanup",
		Usage:     "remove a lease's runtime resources and record a cleanup receipt",
		ArgsUsage: "ID… | --state S | --all-failed | --all",
		Description: `Cleanup removes runtime resources only: the sandbox (and the exported base when
no other lease uses it) and the review worktree, unless the worktree holds edits
the lease did not record: then it is kept (or, with --keep-edits, the edits are
committed on branch lease/ID-edits first). It records a receipt of what was
removed and how each removal was confirmed; the lease's cleanup is confirmed, or
failed and visible until git lease reconcile retries it. The log, the branch
and the result stay: show, diff, review and apply still work. Running it again
changes nothing. It ends with what it removed and what it kept.

Example:
   git lease cleanup 3f9c 77ab
   git lease cleanup --all-failed --state rejected
   git lease cleanup --all`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "every settled lease whose cleanup is not confirmed"},
			stateFlag, allFailedFlag,
			&cli.BoolFlag{Name: "keep-edits", Usage: "commit human edits found in the review worktree, then remove it"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.Bool("all") && (c.NArg() > 0 || c.IsSet("state") || c.Bool("all-failed")) {
				return usagef("cleanup --all takes no lease IDs, --state or --all-failed")
			}
			repo, err := openRepo()
			if err != nil {
				return err
			}
			var leases []*gitlease.Execution
			if c.Bool("all") {
				all, err := gitlease.List(repo)
				if err != nil {
					return err
				}
				for _, x := range all {
					if x.Lease.State.Settled() && (x.Lease.Cleanup == nil || x.Lease.Cleanup.State != gitlease.CleanupConfirmed) && !x.StartedElsewhere() && !x.ReadOnly() {
						leases = append(leases, x)
					}
				}
			} else if leases, err = pickLeases(c, repo, "lease IDs, --state S, --all-failed or --all"); err != nil {
				return err
			}
			type outcome struct {
				ID      string            `json:"id"`
				Changed bool              `json:"changed"`
				Cleanup *gitlease.Cleanup `json:"cleanup"`
			}
			var out []outcome
			failed, refused := 0, 0
			kept := map[string]int{}
			for _, x := range leases {
				cl, changed, err := gitlease.CleanupLease(c.Context, x, gitlease.CleanupOptions{KeepEdits: c.Bool("keep-edits")})
				if err != nil {
					if len(leases) == 1 {
						return err
					}
					fmt.Fprintf(os.Stderr, "git-lease: %v\n", err)
					refused++
					continue
				}
				out = append(out, outcome{string(x.Lease.ID), changed, cl})
				if cl.State != gitlease.CleanupConfirmed {
					failed++
				}
				for _, item := range cl.Receipt {
					if item.Action == "kept" {
						kept[item.Resource]++
					}
				}
				if !c.Bool("json") {
					printCleanup(x, cl, changed)
				}
			}
			if c.Bool("json") {
				printJSON(os.Stdout, out)
			} else if len(leases) > 1 {
				fmt.Printf("cleanup of %d leases: %d confirmed, %d failed, %d refused; kept: every log, branch and result", len(leases), len(out)-failed, failed, refused)
				for _, r := range slices.Sorted(maps.Keys(kept)) {
					fmt.Printf(", %d %s", kept[r], r)
				}
				fmt.Println()
			}
			if refused > 0 {
				return fmt.Errorf("%d of %d leases not cleaned up", refused, len(leases))
			}
			if failed > 0 {
				return errLeaseFailed
			}
			return nil
		},
	}
}

func printCleanup(x *gitlease.Execution, cl *gitlease.Cleanup, changed bool) {
	note := ""
	if !changed {
		note = " (nothing changed)"
	}
	fmt.Printf("lease %s: cleanup %s%s\n", x.Lease.ID, cl.State, note)
	for _, item := range cl.Receipt {
		fmt.Printf("  %-16s %-8s %s\n", item.Resource, item.Action, escape.Line(x.Localize(item.Detail)))
	}
}
