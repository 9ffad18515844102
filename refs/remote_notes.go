package refs

import (
	"context"
	"io"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// NotesRef is an ordinary notes ref: a commit whose tree maps the
// hash of each annotated object, under a fan-out directory ("ab/cdef…")
// when there are many, to its note blob. When a fetch finds that both sides
// added notes, it merges them here with plumbing rather than with git notes
// merge, whose cat_sort_uniq strategy sorts the lines of the notes (so a
// multi-line note is scrambled) and whose union strategy orders the texts by
// side (so two clones never agree on the merged note).

// NoteSeparator is the line between the texts of a note that FetchLeases
// merged because the two sides had annotated the same object differently.
const NoteSeparator = "--- git-lease: next note ---"

// maxNoteSize bounds each note read for a merge.
const maxNoteSize = 16 << 20

// SplitNote returns the texts of a note: one for a note written once, more
// for a note that FetchLeases merged. Each text is trimmed of leading and
// trailing newlines (as git notes does); empty texts are left out.
func SplitNote(note []byte) []string {
	var texts []string
	for _, t := range strings.Split("\n"+string(note)+"\n", "\n"+NoteSeparator+"\n") {
		if t = strings.Trim(t, "\n"); t != "" {
			texts = append(texts, t)
		}
	}
	return texts
}

// joinNotes is the note holding the distinct texts of a and b, sorted, so
// that every clone merging the same two notes writes the same blob, and a
// note merged again with one of its parts does not change.
func joinNotes(a, b []byte) []byte {
	texts := append(SplitNote(a), SplitNote(b)...)
	slices.Sort(texts)
	return []byte(strings.Join(slices.Compact(texts), "\n"+NoteSeparator+"\n") + "\n")
}

// integrateNotes adds what the fetch does with refs/notes/leases to rep and
// updates: create or fast-forward it like any other ref, and merge it when
// both sides moved on.
func (r *Repo) integrateNotes(ctx context.Context, remote string, rep *FetchReport, updates []RefUpdate) ([]RefUpdate, error) {
	fetched, err := r.fetchedTip(remote, NotesRef, rep)
	if err != nil || fetched.IsZero() {
		return updates, err
	}
	out, st, err := r.compareFetched(ctx, NotesRef, fetched)
	if err != nil {
		return nil, err
	}
	if out != fetchDiverged {
		return rep.record(out, st, updates), nil
	}
	merged, err := r.mergeNotes(st.Local, st.Remote, "Notes merged by git lease fetch from "+remote+"\n")
	if err != nil {
		return nil, err
	}
	rep.NotesMerged = true
	return append(updates, RefUpdate{Name: NotesRef, Old: st.Local, New: merged}), nil
}

// mergeNotes writes a notes commit whose parents are local and remote and
// whose tree holds every note of both; an object both annotated differently
// gets one note with both texts (joinNotes).
func (r *Repo) mergeNotes(local, remote plumbing.Hash, message string) (plumbing.Hash, error) {
	notes := map[string]object.TreeEntry{}
	for _, c := range []plumbing.Hash{local, remote} {
		if err := r.collectNotes(c, notes); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	edits := make([]TreeEdit, 0, len(notes))
	for key, e := range notes {
		path := key
		if isNoteKey(key) && len(notes) > 256 { // git's first fan-out level, which Note reads
			path = key[:2] + "/" + key[2:]
		}
		edits = append(edits, TreeEdit{Path: path, Mode: e.Mode, Hash: e.Hash})
	}
	tree, err := r.WriteTreeOrEmpty(plumbing.ZeroHash, edits)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return r.WriteCommit(tree, []plumbing.Hash{local, remote}, message)
}

// collectNotes adds the entries of a notes commit's tree to notes, keyed by
// the annotated object's hash whatever the fan-out (other files by path),
// joining a note that notes already holds with different content.
func (r *Repo) collectNotes(commit plumbing.Hash, notes map[string]object.TreeEntry) error {
	c, err := r.Commit(commit)
	if err != nil {
		return err
	}
	t, err := r.Tree(c.TreeHash)
	if err != nil {
		return err
	}
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	for {
		path, e, err := w.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if e.Mode == filemode.Dir {
			continue
		}
		key := path
		if k := strings.ReplaceAll(path, "/", ""); isNoteKey(k) {
			key = k
		}
		if old, ok := notes[key]; ok && old.Hash != e.Hash {
			a, err := r.ReadBlob(old.Hash, maxNoteSize)
			if err != nil {
				return err
			}
			b, err := r.ReadBlob(e.Hash, maxNoteSize)
			if err != nil {
				return err
			}
			if e.Hash, err = r.WriteBlob(joinNotes(a, b)); err != nil {
				return err
			}
		}
		notes[key] = e
	}
}

// isNoteKey reports whether key is an object hash, as notes are named.
func isNoteKey(key string) bool {
	return len(key) == 40 && isLowerHex(key) // SHA-1: go-git does not open SHA-256 repositories
}
