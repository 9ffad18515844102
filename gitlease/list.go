package gitlease

import (
	"fmt"
	"sort"

	"github.com/git-lease/git-lease/refs"
)

// List loads every lease of the repository, newest first.
func List(repo *refs.Repo) ([]*Execution, error) {
	return listWhere(repo, func(State) bool { return true })
}

// listWhere loads the leases whose log says they are in a state keep
// accepts, newest first.
func listWhere(repo *refs.Repo, keep func(State) bool) ([]*Execution, error) {
	heads, err := repo.LogHeads()
	if err != nil {
		return nil, err
	}
	out := make([]*Execution, 0, len(heads))
	for _, h := range heads {
		if !keep(State(h.State)) {
			continue
		}
		x, err := LoadAt(repo, h.ID, h.Tip)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	newestFirst(out)
	return out, nil
}

// ListRemote loads the leases that the last git lease fetch from remote
// found there, from the fetched logs (refs/remotes/<remote>/leases/<id>),
// newest first. remote must be a configured remote name. A remote never
// fetched from has none, and so has one after a plain git fetch --prune,
// which deletes the fetched logs.
func ListRemote(repo *refs.Repo, remote string) ([]*Execution, error) {
	ids, err := repo.RemoteLeaseIDs(remote)
	if err != nil {
		return nil, err
	}
	out := make([]*Execution, 0, len(ids))
	for _, id := range ids {
		tip, err := repo.Ref(refs.RemoteLogRef(remote, id))
		if err != nil {
			return nil, err
		}
		x, err := LoadAt(repo, id, tip)
		if err != nil {
			return nil, fmt.Errorf("%s's %w", remote, err)
		}
		out = append(out, x)
	}
	newestFirst(out)
	return out, nil
}

// newestFirst sorts leases by creation time, newest first, then by ID.
func newestFirst(out []*Execution) {
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Lease.CreatedAt.Equal(out[j].Lease.CreatedAt) {
			return out[i].Lease.CreatedAt.After(out[j].Lease.CreatedAt)
		}
		return out[i].Lease.ID < out[j].Lease.ID
	})
}
