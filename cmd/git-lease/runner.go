package main

import (
	"context"
	"fmt"
	"os"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs"
)

// runRunner is git-lease as a lease's runner (git-lease __run ID), started
// by a supervisor. In a Herdr pane it stays after the lease is done, so the
// pane (and its output) stays until cleanup closes it: Herdr removes a pane
// whose program exits.
func runRunner(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "git-lease: __run needs a lease ID")
		return exitUsage
	}
	id, err := refs.ParseID(args[0])
	if err != nil {
		fail(err)
		return exitUsage
	}
	repo, err := openRepo()
	if err != nil {
		fail(err)
		return exitFailed
	}
	x, err := gitlease.RunLease(context.Background(), repo, id, os.Stdout, os.Stderr)
	if err != nil {
		fail(err)
	}
	if x != nil && x.Lease.Supervisor != nil && x.Lease.Supervisor.Supervisor == "herdr" {
		fmt.Printf("\nlease %s: %s. This pane stays until git lease cleanup %s closes it.\n", x.Lease.ID, x.Lease.State, x.Lease.ID.Short())
		select {}
	}
	if err != nil {
		return exitFailed
	}
	return exitOK
}
