package refs_test

import (
	"context"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

func TestDefaultRemoteIsTheUpstreamsElseOrigin(t *testing.T) {
	ctx := context.Background()
	tm := newTeam(t)
	refstest.Git(t, tm.dirA, "remote", "add", "upstream", tm.server)
	if got := tm.a.DefaultRemote(ctx); got != "origin" {
		t.Fatalf("a clone's default remote = %q, want origin", got)
	}
	refstest.Git(t, tm.dirA, "config", "branch.main.remote", "upstream")
	if got := tm.a.DefaultRemote(ctx); got != "upstream" {
		t.Fatalf("with main tracking upstream: %q", got)
	}
	refstest.Git(t, tm.dirA, "config", "branch.main.remote", ".")
	if got := tm.a.DefaultRemote(ctx); got != "origin" {
		t.Fatalf("with main tracking a local branch: %q", got)
	}
	refstest.Git(t, tm.dirA, "checkout", "-q", "--detach")
	if got := tm.a.DefaultRemote(ctx); got != "origin" {
		t.Fatalf("on a detached HEAD: %q", got)
	}
	for name, want := range map[string]bool{"origin": true, "upstream": true, "orig": false, "": false} {
		if got := tm.a.IsRemote(ctx, name); got != want {
			t.Errorf("IsRemote(%q) = %v", name, got)
		}
	}
	if got, want := refs.RemoteLogRef("origin", "0123456789ab"), "refs/remotes/origin/leases/0123456789ab"; got != want {
		t.Errorf("RemoteLogRef = %q, want %q", got, want)
	}
}
