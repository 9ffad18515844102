package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/git-lease/git-lease/refs"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/urfave/cli/v2"
)

func lsCommand() *cli.Command {
	return &cli.Command{
		Name:  "ls",
		Usage: "list the leases of this repository",
		Description: `Ls lists every lease with a log in refs/leases, newest first. With --remote
REMOTE it lists a teammate's leases as git lease fetch REMOTE last found them
(refs/remotes/REMOTE/leases), for review.

Example:
   git lease ls --mission TICKET-42 --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mission", Usage: "only leases serving this mission"},
			&cli.StringFlag{Name: "remote", Usage: "the leases fetched from this remote by git lease fetch, for review"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("ls takes no arguments")
			}
			return runLs(c.String("mission"), c.String("remote"), c.Bool("json"))
		},
	}
}

func runLs(mission, remote string, asJSON bool) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	all, broken, err := listLeases(repo, remote)
	if err != nil {
		return err
	}
	// Logs it cannot read go to standard error, so the listing of the
	// others (and its JSON) stays as it is.
	if asJSON && len(broken) > 0 {
		if err := printJSON(os.Stderr, map[string][]gitlease.Broken{"broken": broken}); err != nil {
			return err
		}
	} else {
		printBroken(broken)
	}
	list := []leaseJSON{}
	for _, x := range all {
		if mission == "" || x.Lease.Mission == mission {
			j := toJSON(x)
			if remote != "" {
				j.Worktree = "" // a remote's lease has no review worktree here
			}
			list = append(list, j)
		}
	}
	if asJSON {
		return printJSON(os.Stdout, list)
	}
	list, depth := asTree(list)
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTATE\tMODE\tBASE\tMISSION\tSUMMARY")
	for i, l := range list {
		summary := l.Reason
		if l.Result != nil && l.State != gitlease.Failed {
			summary = l.Result.Summary + checksNote(l.Result.Checks)
		}
		if n := l.EscapeAttempts(); n > 0 {
			summary += fmt.Sprintf(" (ESCAPE ATTEMPTS: %d)", n)
		}
		if l.RebasedTo != "" && l.State == gitlease.Review {
			summary += " (superseded by " + string(l.RebasedTo) + ")"
		}
		if l.Cleanup != nil && l.Cleanup.State == gitlease.CleanupFailed {
			summary += " (cleanup FAILED)"
		}
		if l.Version > gitlease.RecordVersion {
			summary += " (written by a newer git-lease: read-only)"
		}
		if l.StartedElsewhere && remote == "" {
			summary += " (started in another clone)"
		}
		mission := l.Mission
		if mission == "" {
			mission = "-"
		}
		state := string(l.State)
		if l.State == gitlease.Running && l.Activity != nil {
			state += "/" + l.Activity.State
			if l.Activity.Message != "" {
				summary = l.Activity.Message
			}
		}
		// Mission and summary (a reason, the agent's message) are free
		// text: one line each, no tab to break the columns.
		fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\t%s\n", strings.Repeat("  ", depth[i]), l.ID, state, l.Mode, l.Base[:12], escape.Line(mission), escape.Line(summary))
	}
	return w.Flush()
}

// asTree orders list as the tree of its leases: each lease's children,
// in list order, right after it, with their depth under the first listed
// ancestor. A lease whose parent is not listed is a root, and so is one
// that a cycle of parents (only a forged log has one) left unreached.
func asTree(list []leaseJSON) ([]leaseJSON, []int) {
	listed := map[refs.ID]bool{}
	children := map[refs.ID][]leaseJSON{}
	for _, l := range list {
		listed[l.ID] = true
		children[l.Parent] = append(children[l.Parent], l)
	}
	var out []leaseJSON
	var depth []int
	seen := map[refs.ID]bool{}
	var walk func(l leaseJSON, d int)
	walk = func(l leaseJSON, d int) {
		if seen[l.ID] {
			return
		}
		seen[l.ID] = true
		out, depth = append(out, l), append(depth, d)
		for _, c := range children[l.ID] {
			walk(c, d+1)
		}
	}
	for _, l := range list {
		if l.Parent == "" || !listed[l.Parent] {
			walk(l, 0)
		}
	}
	for _, l := range list {
		walk(l, 0)
	}
	return out, depth
}

// printBroken names, on standard error, each lease log that could not be read.
func printBroken(broken []gitlease.Broken) {
	for _, b := range broken {
		fmt.Fprintf(os.Stderr, "git-lease: lease %s: unreadable, left out: %s (git lease doctor)\n", b.ID, escape.Line(b.Reason))
	}
}

// checksNote flags checks that failed or could not run in a listing:
// " (1 check FAILED)", " (2 checks skipped)".
func checksNote(checks []gitlease.CheckResult) string {
	_, failed, skipped := gitlease.CountChecks(checks)
	n, word := failed, "FAILED"
	if failed == 0 {
		n, word = skipped, "skipped"
	}
	switch n {
	case 0:
		return ""
	case 1:
		return " (1 check " + word + ")"
	}
	return fmt.Sprintf(" (%d checks %s)", n, word)
}
