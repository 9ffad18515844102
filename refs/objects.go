package refs

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// HashBlob computes the git blob hash of size bytes read from rd, without
// writing anything.
func HashBlob(rd io.Reader, size int64) (plumbing.Hash, error) {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	n, err := io.Copy(h, io.LimitReader(rd, size+1))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if n != size {
		return plumbing.ZeroHash, fmt.Errorf("file changed size while reading (%d bytes, expected %d)", n, size)
	}
	var out plumbing.Hash
	copy(out[:], h.Sum(nil))
	return out, nil
}

// HasObject reports whether the object database holds h.
func (r *Repo) HasObject(h plumbing.Hash) bool {
	return r.store.HasEncodedObject(h) == nil
}

// WriteBlobFrom streams size bytes from rd into a new loose blob and returns
// its hash. want, when not zero, must match the written content.
func (r *Repo) WriteBlobFrom(rd io.Reader, size int64, want plumbing.Hash) (plumbing.Hash, error) {
	var n int64
	var got plumbing.Hash
	err := r.store.writeLoose(func(w io.WriteCloser, header func(plumbing.ObjectType, int64) error) error {
		if err := header(plumbing.BlobObject, size); err != nil {
			w.Close()
			return err
		}
		var err error
		n, err = io.Copy(w, io.LimitReader(rd, size))
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		got = w.(interface{ Hash() plumbing.Hash }).Hash()
		return err
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if n != size {
		return plumbing.ZeroHash, fmt.Errorf("file changed size while reading (%d bytes, expected %d)", n, size)
	}
	if !want.IsZero() && got != want {
		return plumbing.ZeroHash, fmt.Errorf("file changed while it was stored (blob %s, expected %s)", got, want)
	}
	return got, nil
}

// WriteBlob stores data as a blob.
func (r *Repo) WriteBlob(data []byte) (plumbing.Hash, error) {
	return r.WriteBlobFrom(bytes.NewReader(data), int64(len(data)), plumbing.ZeroHash)
}

// ReadBlob returns a blob's content, refusing blobs larger than limit bytes.
func (r *Repo) ReadBlob(h plumbing.Hash, limit int64) ([]byte, error) {
	b, err := object.GetBlob(r.store, h)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	if b.Size > limit {
		return nil, fmt.Errorf("blob %s is %d bytes, more than the %d allowed", h, b.Size, limit)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// BlobSize returns the size of a blob without reading it.
func (r *Repo) BlobSize(h plumbing.Hash) (int64, error) {
	return r.store.EncodedObjectSize(h)
}

// Tree reads a tree object.
func (r *Repo) Tree(h plumbing.Hash) (*object.Tree, error) {
	t, err := object.GetTree(r.store, h)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	return t, nil
}

// WriteTree stores a tree with the given entries (sorted here) and returns
// its hash. An existing identical tree is not written again.
func (r *Repo) WriteTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	sortEntries(entries)
	t := &object.Tree{Entries: entries}
	obj := r.store.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	if r.HasObject(obj.Hash()) {
		return obj.Hash(), nil
	}
	return r.store.SetEncodedObject(obj)
}

// Commit reads a commit object.
func (r *Repo) Commit(h plumbing.Hash) (*object.Commit, error) {
	c, err := object.GetCommit(r.store, h)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", h, err)
	}
	return c, nil
}

// WriteCommit stores a commit with the given tree, parents and message,
// authored and committed by the repository's configured identity, and
// signed by CommitSigner when it is set.
func (r *Repo) WriteCommit(tree plumbing.Hash, parents []plumbing.Hash, message string) (plumbing.Hash, error) {
	who, err := r.Identity()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	c := &object.Commit{Author: who, Committer: who, Message: message, TreeHash: tree, ParentHashes: parents}
	if r.CommitSigner != nil {
		unsigned := r.store.NewEncodedObject()
		if err := c.EncodeWithoutSignature(unsigned); err != nil {
			return plumbing.ZeroHash, err
		}
		payload, err := readAll(unsigned)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if c.PGPSignature, err = r.CommitSigner(payload); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("signing a commit: %w", err)
		}
	}
	obj := r.store.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.store.SetEncodedObject(obj)
}

// ErrNoRevision is returned by ResolveCommit for a revision git does not know.
var ErrNoRevision = errors.New("unknown revision")

// ResolveCommit resolves a revision (branch, tag, hash, HEAD~2 …) to a
// commit with `git rev-parse`, which knows every revision syntax. HEAD,
// which every lease start resolves, is read without a git process where
// its file is plain (see head).
func (r *Repo) ResolveCommit(rev string) (plumbing.Hash, error) {
	if rev == "" || rev[0] == '-' {
		return plumbing.ZeroHash, fmt.Errorf("%q: %w", rev, ErrNoRevision)
	}
	if rev == "HEAD" {
		if h, ok := r.headCommit(); ok {
			return h, nil
		}
	}
	out, err := r.GitAt(context.Background(), r.GitDir, nil, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("%s: %w (check the name with git log)", rev, ErrNoRevision)
	}
	return plumbing.NewHash(string(bytes.TrimSpace(out))), nil
}

// BranchOf returns the full branch name rev refers to ("refs/heads/main" for
// "HEAD" on main, or for "main"), or "" when rev is not a branch.
func (r *Repo) BranchOf(rev string) string {
	if rev == "" || rev[0] == '-' {
		return ""
	}
	if rev == "HEAD" {
		if branch, _, ok := r.head(); ok {
			return branch
		}
	}
	out, err := r.GitAt(context.Background(), r.GitDir, nil, nil, "rev-parse", "--symbolic-full-name", rev)
	name := string(bytes.TrimSpace(out))
	if err != nil || !strings.HasPrefix(name, "refs/heads/") {
		return ""
	}
	return name
}

// head reads the checkout's own HEAD file (each worktree has one, in its
// git directory) as git writes it: the branch it is on ("ref:
// refs/heads/…"), or the commit it is detached at. ok is false for
// anything else (a symbolic link, another kind of ref, a file git would
// not write), which is left to git.
func (r *Repo) head() (branch string, detached plumbing.Hash, ok bool) {
	path := filepath.Join(r.GitDir, "HEAD")
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return "", plumbing.ZeroHash, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", plumbing.ZeroHash, false
	}
	line, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return "", plumbing.ZeroHash, false
	}
	if name, isRef := strings.CutPrefix(line, "ref: "); isRef {
		return name, plumbing.ZeroHash, strings.HasPrefix(name, "refs/heads/") && plumbing.ReferenceName(name).Validate() == nil
	}
	if len(line) == 40 && plumbing.IsHash(line) {
		return "", plumbing.NewHash(line), true
	}
	return "", plumbing.ZeroHash, false
}

// headCommit is the commit HEAD is at, read as head reads it; ok is false
// where git must answer (head could not read it, the branch is unborn,
// the object is not a commit).
func (r *Repo) headCommit() (plumbing.Hash, bool) {
	branch, h, ok := r.head()
	if ok && branch != "" {
		var err error
		if h, err = r.Ref(branch); err != nil {
			return plumbing.ZeroHash, false
		}
	}
	if !ok || h.IsZero() {
		return plumbing.ZeroHash, false
	}
	if _, err := r.Commit(h); err != nil {
		return plumbing.ZeroHash, false
	}
	return h, true
}

// CommitSignature returns a commit's signed payload (the commit without its
// signature header) and its signature, "" when it is unsigned.
func (r *Repo) CommitSignature(h plumbing.Hash) (payload []byte, signature string, err error) {
	c, err := r.Commit(h)
	if err != nil {
		return nil, "", err
	}
	obj := r.store.NewEncodedObject()
	if err := c.EncodeWithoutSignature(obj); err != nil {
		return nil, "", err
	}
	payload, err = readAll(obj)
	return payload, c.PGPSignature, err
}

func readAll(o plumbing.EncodedObject) ([]byte, error) {
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}
