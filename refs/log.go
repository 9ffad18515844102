package refs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The lease log of an ID is a chain of commits at refs/leases/<id>, one per
// event, each with the previous event as its only parent (git-bug style).
// Each commit's tree holds the lease's durable files; the newest tree is the
// current state. Appends are compare-and-swap on the previous tip.

// ErrNoFile is returned when a log tree has no file at a path.
var ErrNoFile = errors.New("no such file in the lease log")

// LogTip returns the newest commit of id's log, or ErrNoLease.
func (r *Repo) LogTip(id ID) (plumbing.Hash, error) {
	h, err := r.Ref(id.LogRef())
	if err == nil && h.IsZero() {
		err = fmt.Errorf("%s: %w", id, ErrNoLease)
	}
	return h, err
}

// LogHead is the newest entry of a lease log, as listed by LogHeads.
type LogHead struct {
	ID  ID
	Tip plumbing.Hash
	// State is what the entry's Lease-State trailer says, read without
	// the record: enough to pick which leases to load.
	State string
}

// LogHeads lists every lease log's newest entry, sorted by ID, from one git
// for-each-ref (go-git would scan packed-refs once per lease).
func (r *Repo) LogHeads() ([]LogHead, error) {
	out, err := r.Git(context.Background(), nil, "for-each-ref",
		"--format=%(objectname) %(refname) %(trailers:key="+TrailerState+",valueonly,separator=%x2C)", "--", "refs/leases/")
	if err != nil {
		return nil, err
	}
	var heads []LogHead
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 {
			continue
		}
		if id, err := ParseID(strings.TrimPrefix(f[1], "refs/leases/")); err == nil {
			heads = append(heads, LogHead{ID: id, Tip: plumbing.NewHash(f[0]), State: f[2]})
		}
	}
	sort.Slice(heads, func(i, j int) bool { return heads[i].ID < heads[j].ID })
	return heads, nil
}

// LeaseIDs lists the IDs that have a log, sorted.
func (r *Repo) LeaseIDs() ([]ID, error) {
	heads, err := r.LogHeads()
	ids := make([]ID, len(heads))
	for i, h := range heads {
		ids[i] = h.ID
	}
	return ids, err
}

// ResolveID resolves a full ID or a unique prefix of 4 or more characters
// against the leases of this repository.
func (r *Repo) ResolveID(prefix string) (ID, error) {
	ids, err := r.LeaseIDs()
	if err != nil {
		return "", err
	}
	return Resolve(prefix, ids)
}

// ReadFile returns the content of path in commit's tree, at most limit bytes.
func (r *Repo) ReadFile(commit plumbing.Hash, path string, limit int64) ([]byte, error) {
	c, err := r.Commit(commit)
	if err != nil {
		return nil, err
	}
	t, err := r.Tree(c.TreeHash)
	if err != nil {
		return nil, err
	}
	e, err := t.FindEntry(path)
	if err != nil || e.Mode == filemode.Dir {
		return nil, fmt.Errorf("%s: %w", path, ErrNoFile)
	}
	return r.ReadBlob(e.Hash, limit)
}

// ListFiles returns the paths under dir (e.g. "result/checks") in commit's tree.
func (r *Repo) ListFiles(commit plumbing.Hash, dir string) ([]string, error) {
	c, err := r.Commit(commit)
	if err != nil {
		return nil, err
	}
	t, err := r.Tree(c.TreeHash)
	if err != nil {
		return nil, err
	}
	sub, err := t.Tree(dir)
	if err != nil {
		return nil, nil
	}
	var out []string
	w := object.NewTreeWalker(sub, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.Mode != filemode.Dir {
			out = append(out, dir+"/"+name)
		}
	}
	return out, nil
}

// Append writes one log entry for id: a commit whose parent is tip (zero
// for the first entry) and whose tree is tip's tree with files set (a nil
// value deletes the path). extra ref updates join the same transaction, so a
// branch and the log move together or not at all. A tip that is no longer
// current fails with ErrStale and writes no ref.
func (r *Repo) Append(ctx context.Context, id ID, tip plumbing.Hash, files map[string][]byte, message string, extra ...RefUpdate) (plumbing.Hash, error) {
	var baseTree plumbing.Hash
	var parents []plumbing.Hash
	if !tip.IsZero() {
		c, err := r.Commit(tip)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		baseTree, parents = c.TreeHash, []plumbing.Hash{tip}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	edits := make([]TreeEdit, 0, len(paths))
	for _, p := range paths {
		if files[p] == nil {
			edits = append(edits, TreeEdit{Path: p, Delete: true})
			continue
		}
		h, err := r.WriteBlob(files[p])
		if err != nil {
			return plumbing.ZeroHash, err
		}
		edits = append(edits, TreeEdit{Path: p, Mode: filemode.Regular, Hash: h})
	}
	tree, err := r.WriteTreeOrEmpty(baseTree, edits)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	commit, err := r.WriteCommit(tree, parents, message)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	updates := append([]RefUpdate{{Name: id.LogRef(), Old: tip, New: commit}}, extra...)
	if err := r.Update(ctx, message, updates...); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("lease %s: %w", id, err)
	}
	return commit, nil
}

// LogEntry is one commit of a lease log.
type LogEntry struct {
	Commit  plumbing.Hash
	Message string
	Parents []plumbing.Hash
	Tree    plumbing.Hash
}

// Log returns id's log from the first entry to tip, following first parents.
// It stops with an error at a commit with more than one parent.
func (r *Repo) Log(tip plumbing.Hash) ([]LogEntry, error) {
	var out []LogEntry
	for h := tip; !h.IsZero(); {
		c, err := r.Commit(h)
		if err != nil {
			return nil, err
		}
		if len(c.ParentHashes) > 1 {
			return nil, fmt.Errorf("lease log commit %s has %d parents: a log is a single chain", h, len(c.ParentHashes))
		}
		out = append(out, LogEntry{Commit: h, Message: c.Message, Parents: c.ParentHashes, Tree: c.TreeHash})
		h = plumbing.ZeroHash
		if len(c.ParentHashes) == 1 {
			h = c.ParentHashes[0]
		}
		if len(out) > 100000 {
			return nil, errors.New("lease log is longer than 100000 entries")
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// maxNewCommits bounds NewCommits, against a hostile push.
const maxNewCommits = 100000

// NewCommits lists the commits reachable from tip but not from old (zero:
// every commit of tip), newest first, merges included: what a push of tip
// over old brings.
func (r *Repo) NewCommits(ctx context.Context, old, tip plumbing.Hash) ([]plumbing.Hash, error) {
	args := []string{"rev-list", fmt.Sprintf("--max-count=%d", maxNewCommits+1), tip.String()}
	if !old.IsZero() {
		args = append(args, "^"+old.String())
	}
	out, err := r.Git(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	var hashes []plumbing.Hash
	for _, line := range strings.Fields(string(out)) {
		hashes = append(hashes, plumbing.NewHash(line))
	}
	if len(hashes) > maxNewCommits {
		return nil, fmt.Errorf("more than %d new commits", maxNewCommits)
	}
	return hashes, nil
}
