package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/urfave/cli/v2"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one lease: state, base, result and where to review it",
		ArgsUsage: "ID",
		Description: `Show prints what a reviewer needs first: state, mode, base, the files changed
and where to look. ID may be any unique prefix of 4 or more characters.

Example:
   git lease show 3f9c --json`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			id, err := oneID(c)
			if err != nil {
				return err
			}
			return runShow(id, c.Bool("json"))
		},
	}
}

func runShow(prefix string, asJSON bool) error {
	repo, err := openRepo()
	if err != nil {
		return err
	}
	x, err := gitlease.LoadPrefix(repo, prefix)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(os.Stdout, toJSON(x))
	}
	printLease(os.Stdout, x)
	return nil
}

func printLease(w io.Writer, x *gitlease.Execution) {
	l := x.Lease
	fmt.Fprintf(w, "lease %s: %s\n", l.ID, l.State)
	if l.Reason != "" {
		fmt.Fprintf(w, "reason:   %s\n", l.Reason)
	}
	fmt.Fprintf(w, "mode:     %s\n", modeLabel(l))
	base := l.Base
	switch {
	case l.SnapshotOf != "":
		base += fmt.Sprintf(" (snapshot of uncommitted changes on %s)", l.SnapshotOf[:12])
	case l.BaseRef != "":
		base += " (" + strings.TrimPrefix(l.BaseRef, "refs/heads/") + ")"
	}
	fmt.Fprintf(w, "base:     %s\n", base)
	fmt.Fprintf(w, "branch:   %s\n", l.Branch)
	fmt.Fprintf(w, "worktree: %s\n", x.Worktree())
	if l.Mission != "" {
		fmt.Fprintf(w, "mission:  %s\n", l.Mission)
	}
	fmt.Fprintf(w, "command:  %s\n", strings.Join(l.Command, " "))
	if l.Enforcement != "" {
		fmt.Fprintf(w, "bounds:   %s\n", l.Enforcement)
	}
	if a := l.Agent; a != nil {
		fmt.Fprintf(w, "agent:    exited %d, %d bytes of output\n", a.Code, a.OutputBytes)
	}
	if r := l.Result; r != nil {
		fmt.Fprintf(w, "result:   %s (%s)\n", r.Summary, r.Status)
		for _, f := range r.Manifest {
			fmt.Fprintf(w, "  %s %s\n", f.Status, f.Path)
		}
		fmt.Fprintf(w, "patch:    %s\n", r.PatchDigest)
	}
}
