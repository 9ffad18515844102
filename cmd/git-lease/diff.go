package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/escape"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "print the patch the host computed for a lease",
		ArgsUsage: "ID",
		Description: `Diff prints the canonical patch recorded in the lease log (result/patch.diff):
base against result. It works after cleanup, from the log alone. The files'
content is the agent's: terminal controls in it (ESC, C1 and bidi controls,
invalid UTF-8) are printed as escapes such as \x1b and \u202e; --raw writes
the patch exactly as its digest covers it, for git apply. A quarantined
result's patch is shown too (it was never materialized), after its findings
on standard error, each at its path.

Example:
   git lease diff 3f9c | less
   git lease diff --raw 3f9c | git apply`,
		Flags: []cli.Flag{rawFlag},
		Action: func(c *cli.Context) error {
			x, err := loadOne(c)
			if err != nil {
				return err
			}
			patch, err := x.Patch()
			if err != nil {
				return err
			}
			if !c.Bool("raw") {
				patch = escape.Text(patch)
			}
			if l := x.Lease; l.State == gitlease.Quarantined {
				fmt.Fprintf(os.Stderr, "lease %s is quarantined: this patch was refused and never materialized; its findings:\n", l.ID.Short())
				for _, f := range l.Findings {
					fmt.Fprintf(os.Stderr, "  %s %s %q: %s\n", f.Severity, f.Rule, f.Path, escape.Line(f.Detail))
				}
				if l.FindingsOmitted > 0 {
					fmt.Fprintf(os.Stderr, "  … and %d more not recorded\n", l.FindingsOmitted)
				}
			}
			_, err = os.Stdout.Write(patch)
			return err
		},
	}
}
