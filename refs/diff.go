package refs

import (
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Change is one path that differs between two trees. Status is "A", "M" or
// "D"; a path that turns from a file into a directory is a deletion of the
// file plus additions under the directory.
type Change struct {
	Path    string
	Status  string
	OldMode filemode.FileMode
	NewMode filemode.FileMode
	OldBlob plumbing.Hash
	NewBlob plumbing.Hash
}

// DiffTrees lists the changed leaf paths (files, symlinks, gitlinks) from tree
// a to tree b, in path order. A zero hash stands for the empty tree.
func (r *Repo) DiffTrees(a, b plumbing.Hash) ([]Change, error) {
	var out []Change
	err := r.diff("", a, b, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

func (r *Repo) entries(h plumbing.Hash) ([]object.TreeEntry, error) {
	if h.IsZero() || h == EmptyTree {
		return nil, nil
	}
	t, err := r.Tree(h)
	if err != nil {
		return nil, err
	}
	return t.Entries, nil
}

func (r *Repo) diff(prefix string, a, b plumbing.Hash, out *[]Change) error {
	if a == b {
		return nil
	}
	ea, err := r.entries(a)
	if err != nil {
		return err
	}
	eb, err := r.entries(b)
	if err != nil {
		return err
	}
	byName := map[string]object.TreeEntry{}
	for _, e := range ea {
		byName[e.Name] = e
	}
	var names []string
	seen := map[string]bool{}
	for _, e := range append(append([]object.TreeEntry{}, ea...), eb...) {
		if !seen[e.Name] {
			seen[e.Name] = true
			names = append(names, e.Name)
		}
	}
	inB := map[string]object.TreeEntry{}
	for _, e := range eb {
		inB[e.Name] = e
	}
	for _, name := range names {
		oa, hasA := byName[name]
		ob, hasB := inB[name]
		path := prefix + name
		dirA := hasA && oa.Mode == filemode.Dir
		dirB := hasB && ob.Mode == filemode.Dir
		var subA, subB plumbing.Hash
		if dirA {
			subA = oa.Hash
		}
		if dirB {
			subB = ob.Hash
		}
		if hasA && !dirA && hasB && !dirB {
			if oa.Hash != ob.Hash || oa.Mode != ob.Mode {
				*out = append(*out, Change{Path: path, Status: "M", OldMode: oa.Mode, NewMode: ob.Mode, OldBlob: oa.Hash, NewBlob: ob.Hash})
			}
			continue
		}
		if hasA && !dirA {
			*out = append(*out, Change{Path: path, Status: "D", OldMode: oa.Mode, OldBlob: oa.Hash})
		}
		if dirA || dirB {
			if err := r.diff(path+"/", subA, subB, out); err != nil {
				return err
			}
		}
		if hasB && !dirB {
			*out = append(*out, Change{Path: path, Status: "A", NewMode: ob.Mode, NewBlob: ob.Hash})
		}
	}
	return nil
}
