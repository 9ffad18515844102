package gitlease

import (
	"sort"

	"github.com/git-lease/git-lease/refs"
)

// List loads every lease of the repository, newest first.
func List(repo *refs.Repo) ([]*Execution, error) {
	ids, err := repo.LeaseIDs()
	if err != nil {
		return nil, err
	}
	out := make([]*Execution, 0, len(ids))
	for _, id := range ids {
		x, err := Load(repo, id)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Lease.CreatedAt.Equal(out[j].Lease.CreatedAt) {
			return out[i].Lease.CreatedAt.After(out[j].Lease.CreatedAt)
		}
		return out[i].Lease.ID < out[j].Lease.ID
	})
	return out, nil
}
