package refs

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
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
