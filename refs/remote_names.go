package refs

import (
	"context"
	"slices"
	"strings"
)

// RemoteLogRef is where FetchLeases keeps remote's log of id:
// refs/remotes/<remote>/leases/<id>.
func RemoteLogRef(remote string, id ID) string {
	return trackingPrefix(remote) + "leases/" + string(id)
}

// RemoteBranchRef is where FetchLeases keeps remote's review branch of id:
// refs/remotes/<remote>/lease/<id>.
func RemoteBranchRef(remote string, id ID) string {
	return trackingPrefix(remote) + "lease/" + string(id)
}

// DefaultRemote is the remote to push leases to and fetch them from when
// the user names none: the remote of the upstream of the branch checked out
// here, else "origin". It does not check that the remote exists; PushLeases
// and FetchLeases do.
func (r *Repo) DefaultRemote(ctx context.Context) string {
	if branch := r.BranchOf("HEAD"); branch != "" {
		out, err := r.GitAt(ctx, r.GitDir, nil, nil, "config", "--get", "branch."+strings.TrimPrefix(branch, "refs/heads/")+".remote")
		if remote := strings.TrimSpace(string(out)); err == nil && remote != "" && remote != "." {
			return remote
		}
	}
	return "origin"
}

// IsRemote reports whether name is a configured remote (git remote).
func (r *Repo) IsRemote(ctx context.Context, name string) bool {
	out, err := r.Git(ctx, nil, "remote")
	return err == nil && slices.Contains(strings.Fields(string(out)), name)
}
