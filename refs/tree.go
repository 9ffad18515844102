package refs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TreeEdit changes one path of a tree. Delete removes the path (a file or a
// whole directory); otherwise the path is set to Mode and Hash, creating
// directories on the way and replacing a file that stood where a directory
// is needed.
type TreeEdit struct {
	Path   string
	Mode   filemode.FileMode
	Hash   plumbing.Hash
	Delete bool
}

// editNode is a directory of pending edits. replace means the base tree's
// entries at this directory are dropped before the edits apply.
type editNode struct {
	replace  bool
	deleted  bool
	leaf     *object.TreeEntry
	children map[string]*editNode
}

// EditTree applies edits, in order, to the tree base (plumbing.ZeroHash: an
// empty tree) and returns the new tree's hash. Unchanged subtrees are reused;
// directories left empty disappear, as in git. Edits must carry clean
// slash-separated relative paths; verification of untrusted paths happens
// before this is called.
func (r *Repo) EditTree(base plumbing.Hash, edits []TreeEdit) (plumbing.Hash, error) {
	root := &editNode{}
	for _, e := range edits {
		if e.Path == "" {
			if !e.Delete {
				return plumbing.ZeroHash, fmt.Errorf("tree edit: cannot set the root")
			}
			root = &editNode{replace: true}
			continue
		}
		parts := strings.Split(e.Path, "/")
		n := root
		for _, p := range parts[:len(parts)-1] {
			if p == "" || p == "." || p == ".." {
				return plumbing.ZeroHash, fmt.Errorf("tree edit: bad path %q", e.Path)
			}
			n = n.child(p)
		}
		name := parts[len(parts)-1]
		if name == "" || name == "." || name == ".." {
			return plumbing.ZeroHash, fmt.Errorf("tree edit: bad path %q", e.Path)
		}
		if n.children == nil {
			n.children = map[string]*editNode{}
		}
		if e.Delete {
			n.children[name] = &editNode{deleted: true, replace: true}
		} else {
			n.children[name] = &editNode{leaf: &object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash}}
		}
	}
	return r.merge(base, root)
}

// child returns the directory node for name, turning a pending leaf or
// deletion into a directory that replaces whatever the base had there.
func (n *editNode) child(name string) *editNode {
	if n.children == nil {
		n.children = map[string]*editNode{}
	}
	c := n.children[name]
	switch {
	case c == nil:
		c = &editNode{}
	case c.leaf != nil || c.deleted:
		c = &editNode{replace: true}
	default:
		return c
	}
	n.children[name] = c
	return c
}

func (r *Repo) merge(base plumbing.Hash, n *editNode) (plumbing.Hash, error) {
	if len(n.children) == 0 && !n.replace {
		return base, nil
	}
	entries := map[string]object.TreeEntry{}
	if !base.IsZero() && !n.replace {
		t, err := r.Tree(base)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	for name, c := range n.children {
		old, had := entries[name]
		switch {
		case c.leaf != nil:
			entries[name] = *c.leaf
		case c.deleted && len(c.children) == 0:
			delete(entries, name)
		default:
			sub := plumbing.ZeroHash
			if had && old.Mode == filemode.Dir && !c.replace {
				sub = old.Hash
			}
			h, err := r.merge(sub, c)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if h.IsZero() {
				delete(entries, name)
			} else {
				entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
			}
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	list := make([]object.TreeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	return r.WriteTree(list)
}

// EmptyTree is the hash of git's empty tree.
var EmptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// WriteTreeOrEmpty is EditTree that returns (and stores) the empty tree
// instead of the zero hash when nothing is left.
func (r *Repo) WriteTreeOrEmpty(base plumbing.Hash, edits []TreeEdit) (plumbing.Hash, error) {
	h, err := r.EditTree(base, edits)
	if err != nil || !h.IsZero() {
		return h, err
	}
	return r.WriteTree(nil)
}

func sortEntries(entries []object.TreeEntry) {
	sort.Slice(entries, func(i, j int) bool { return sortName(entries[i]) < sortName(entries[j]) })
}

// sortName is git's tree order: directories compare as if named "name/".
func sortName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}
