package refs

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// NotesRef holds git-lease's evidence on result commits, readable with
// git log --notes=leases.
const NotesRef = "refs/notes/leases"

// RevocationsRef is the log of revocation decisions (git lease revoke): a
// chain of signed commits like a lease log. It travels with push and fetch
// beside the logs; fetch keeps the remote's under
// refs/remotes/<remote>/lease-revocations/log.
const RevocationsRef = "refs/lease-revocations/log"

// notePaths are the places a note for object can be in a notes tree: flat,
// or under git's two-character fan-out directory.
func notePaths(object plumbing.Hash) []string {
	h := object.String()
	return []string{h, h[:2] + "/" + h[2:]}
}

// NoteUpdate prepares a note on object with content: it writes the new
// notes commit (parent: the current notes tip) and returns the ref update
// to include in the caller's transaction, so the note lands together with
// whatever it annotates or not at all. It keeps the layout the notes tree
// already uses (flat, or git's fan-out) and replaces an existing note.
func (r *Repo) NoteUpdate(object plumbing.Hash, content []byte, message string) (RefUpdate, error) {
	tip, err := r.Ref(NotesRef)
	if err != nil {
		return RefUpdate{}, err
	}
	var baseTree plumbing.Hash
	var parents []plumbing.Hash
	fanout := false
	if !tip.IsZero() {
		c, err := r.Commit(tip)
		if err != nil {
			return RefUpdate{}, err
		}
		baseTree, parents = c.TreeHash, []plumbing.Hash{tip}
		t, err := r.Tree(baseTree)
		if err != nil {
			return RefUpdate{}, err
		}
		for _, e := range t.Entries {
			fanout = fanout || (e.Mode == filemode.Dir && len(e.Name) == 2)
		}
	}
	blob, err := r.WriteBlob(content)
	if err != nil {
		return RefUpdate{}, err
	}
	paths := notePaths(object)
	keep, drop := paths[0], paths[1]
	if fanout {
		keep, drop = drop, keep
	}
	tree, err := r.EditTree(baseTree, []TreeEdit{{Path: drop, Delete: true}, {Path: keep, Mode: filemode.Regular, Hash: blob}})
	if err != nil {
		return RefUpdate{}, err
	}
	commit, err := r.WriteCommit(tree, parents, message)
	if err != nil {
		return RefUpdate{}, err
	}
	return RefUpdate{Name: NotesRef, Old: tip, New: commit}, nil
}

// ChangedNotes lists the notes that the notes commit tip adds or changes
// over the notes commit old (zero: every note of tip): the annotated
// object's hash, and the note's blob. A path of the notes tree that names
// no object (neither 40 hex digits flat nor under a two-digit fan-out
// directory) is an error: git notes would not read it, so nobody could
// review it.
func (r *Repo) ChangedNotes(old, tip plumbing.Hash) (map[plumbing.Hash]plumbing.Hash, error) {
	tree := func(commit plumbing.Hash) (*object.Tree, error) {
		if commit.IsZero() {
			return &object.Tree{}, nil
		}
		c, err := r.Commit(commit)
		if err != nil {
			return nil, err
		}
		return r.Tree(c.TreeHash)
	}
	from, err := tree(old)
	if err != nil {
		return nil, err
	}
	to, err := tree(tip)
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(from, to)
	if err != nil {
		return nil, err
	}
	out := map[plumbing.Hash]plumbing.Hash{}
	for _, ch := range changes {
		if ch.To.Name == "" {
			continue // a note removed: git notes remove, or one moved into a fan-out directory
		}
		name := strings.ReplaceAll(ch.To.Name, "/", "")
		if len(name) != 40 || !isLowerHex(name) || (strings.Contains(ch.To.Name, "/") && ch.To.Name != name[:2]+"/"+name[2:]) || ch.To.TreeEntry.Mode != filemode.Regular {
			return nil, fmt.Errorf("%s is not a note: a notes tree holds regular files named by an object's hash", ch.To.Name)
		}
		out[plumbing.NewHash(name)] = ch.To.TreeEntry.Hash
	}
	return out, nil
}
