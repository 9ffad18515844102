package main

import (
	"fmt"
	"os"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/refs"
)

// listLeases loads this repository's leases, or with remote the leases
// fetched from it, saying how to get them when there are none; with the
// logs it cannot read.
func listLeases(repo *refs.Repo, remote string) ([]*gitlease.Execution, []gitlease.Broken, error) {
	if remote == "" {
		return gitlease.ListAll(repo)
	}
	all, broken, err := gitlease.ListRemote(repo, remote)
	if err == nil && len(all) == 0 && len(broken) == 0 {
		fmt.Fprintf(os.Stderr, "git-lease: no leases fetched from %s: run git lease fetch %s (a plain git fetch --prune deletes what it fetched)\n", remote, remote)
	}
	return all, broken, err
}
