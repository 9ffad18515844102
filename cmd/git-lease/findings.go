package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
	"github.com/git-lease/git-lease/refs"
)

func findingsCommand() *cli.Command {
	return &cli.Command{
		Name:      "findings",
		Usage:     "list security findings: rejected results, refused connections, escape attempts",
		ArgsUsage: "[ID]",
		Description: `Findings lists, across leases (or for one), every rule a result broke, every
refused connection and every escape attempt its sandbox recorded, with its
severity and path, from the lease logs. An escape attempt is never just a log
line: its path is the call the agent made (with its decisive arguments) or the
path it named, and --json adds how often and when.

Example:
   git lease findings --rule escape-attempt --severity critical --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "rule", Usage: "only findings of this rule (escape-attempt, network-refused, path-dotdot, …), or escape attempts of this sandbox rule (namespaces, secrets, write-outside, …)"},
			&cli.StringFlag{Name: "severity", Usage: "only findings of this severity (critical, high, medium)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usagef("findings takes at most one lease ID")
			}
			repo, err := openRepo()
			if err != nil {
				return err
			}
			var only []refs.ID
			if c.NArg() == 1 {
				id, err := repo.ResolveID(c.Args().First())
				if err != nil {
					return err
				}
				only = append(only, id)
			}
			all, err := gitlease.Findings(repo, only...)
			if err != nil {
				return err
			}
			list := []gitlease.LeaseFinding{}
			for _, f := range all {
				rule := c.String("rule")
				ruled := rule == "" || f.Rule == rule || f.Attempt != nil && f.Attempt.Rule == rule
				if ruled && (c.String("severity") == "" || f.Severity == c.String("severity")) {
					list = append(list, f)
				}
			}
			if c.Bool("json") {
				return printJSON(os.Stdout, list)
			}
			if len(list) == 0 {
				fmt.Println("no findings")
				return nil
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "LEASE\tSEVERITY\tRULE\tPATH\tDETAIL")
			for _, f := range list {
				// The path is quoted as Go quotes (every control escaped);
				// the detail may name what the agent asked for (a host).
				fmt.Fprintf(w, "%s\t%s\t%s\t%q\t%s\n", f.Lease, f.Severity, f.Rule, f.Path, escape.Line(f.Detail))
			}
			return w.Flush()
		},
	}
}
