package main

import (
	"strings"
	"testing"

	"github.com/git-lease/git-lease/gitlease"
	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

func TestShowLinksARebasedLeaseBothWays(t *testing.T) {
	repo, err := refs.Open(refstest.Repo(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printLease(&b, &gitlease.Execution{Repo: repo, Lease: &gitlease.Lease{ID: "8f56dcbf069a", State: gitlease.Review, Policy: &policy.Effective{}, Base: "5c9d4a79a1021de501e1f298e75e00a99b6fbc4f", RebasedTo: "211b41ffbbd6"}})
	printLease(&b, &gitlease.Execution{Repo: repo, Lease: &gitlease.Lease{ID: "211b41ffbbd6", State: gitlease.Review, Policy: &policy.Effective{}, Base: "a7bc0536ec2d0000000000000000000000000000", RebasedFrom: "8f56dcbf069a"}})
	for _, want := range []string{
		"rebased:  as lease 211b41ffbbd6, which is the one to review (git lease show 211b41ff)\n",
		"rebased:  from lease 8f56dcbf069a\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, b.String())
		}
	}
}
