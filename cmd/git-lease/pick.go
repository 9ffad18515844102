package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs"
)

// Flags that choose leases by state, as well as by ID, for a command that
// takes several.
var (
	stateFlag     = &cli.StringSliceFlag{Name: "state", Usage: "every lease of this clone in state `S` (repeatable)"}
	allFailedFlag = &cli.BoolFlag{Name: "all-failed", Usage: "every failed lease of this clone (--state failed)"}
)

// pickLeases returns the leases that the command's arguments name (ID
// prefixes) and its pick flags select, each once, in that order; leases
// fetched from another clone, which are cleaned up and decided there, are
// selected by state only when named. Nothing named or selected is a usage
// error that says what the command takes.
func pickLeases(c *cli.Context, repo *refs.Repo, takes string) ([]*gitlease.Execution, error) {
	states := c.StringSlice("state")
	if c.Bool("all-failed") {
		states = append(states, string(gitlease.Failed))
	}
	if c.NArg() == 0 && len(states) == 0 {
		return nil, usagef("%s needs %s (see git lease ls)", c.Command.Name, takes)
	}
	var out []*gitlease.Execution
	seen := map[refs.ID]bool{}
	for _, p := range c.Args().Slice() {
		x, err := gitlease.LoadPrefix(repo, p)
		if err != nil {
			return nil, err
		}
		if !seen[x.Lease.ID] {
			seen[x.Lease.ID] = true
			out = append(out, x)
		}
	}
	if len(states) == 0 {
		return out, nil
	}
	for _, s := range states {
		if !gitlease.State(s).Recorded() {
			return nil, usagef("--state %s: not a lease state (provisioning, running, collecting, verifying, review, applied, rejected, quarantined, failed, canceled)", s)
		}
	}
	all, err := gitlease.List(repo)
	if err != nil {
		return nil, err
	}
	for _, x := range all {
		if slices.Contains(states, string(x.Lease.State)) && !seen[x.Lease.ID] && !x.StartedElsewhere() && !x.ReadOnly() {
			seen[x.Lease.ID] = true
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no lease of this clone is %s", strings.Join(states, " or "))
	}
	return out, nil
}
