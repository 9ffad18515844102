package gitlease

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/verify"
)

// collected is what the host computed from a delta.
type collected struct {
	Tree     plumbing.Hash
	Manifest *verify.Manifest
	Patch    []byte
	// entries are the delta's entries by path, as lstat saw them.
	entries map[string]sandbox.Entry
}

// scan lists a delta's entries with lstat only.
func scan(ctx context.Context, d sandbox.Delta) ([]sandbox.Entry, error) {
	var out []sandbox.Entry
	err := sandbox.Walk(d, func(e sandbox.Entry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("collect: %w", err)
	}
	return out, nil
}

// build stores the delta's files as blobs and builds the result tree from
// the base tree, on the host: it never follows a link and never runs git
// inside the delta. Empty directories are ignored, as git ignores them.
// Entries must have passed precheck: no special files, no oversize files.
func build(ctx context.Context, repo *refs.Repo, base plumbing.Hash, d sandbox.Delta, entries []sandbox.Entry) (*collected, error) {
	baseCommit, err := repo.Commit(base)
	if err != nil {
		return nil, err
	}
	var edits []refs.TreeEdit
	if d.Layout == sandbox.Full {
		edits = append(edits, refs.TreeEdit{Path: "", Delete: true})
	}
	byPath := make(map[string]sandbox.Entry, len(entries))
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		byPath[e.Path] = e
		switch e.Kind {
		case sandbox.Whiteout:
			edits = append(edits, refs.TreeEdit{Path: e.Path, Delete: true})
		case sandbox.Dir:
			if e.Opaque {
				edits = append(edits, refs.TreeEdit{Path: e.Path, Delete: true})
			}
		case sandbox.Symlink:
			h, err := repo.WriteBlob([]byte(e.Target))
			if err != nil {
				return nil, err
			}
			edits = append(edits, refs.TreeEdit{Path: e.Path, Mode: filemode.Symlink, Hash: h})
		case sandbox.File:
			h, err := storeFile(repo, d, e)
			if err != nil {
				return nil, fmt.Errorf("collect: %w", err)
			}
			mode := filemode.Regular
			if e.Mode&0o100 != 0 {
				mode = filemode.Executable
			}
			edits = append(edits, refs.TreeEdit{Path: e.Path, Mode: mode, Hash: h})
		default:
			return nil, fmt.Errorf("collect: %s: a %s cannot be part of a result", e.Path, e.Kind)
		}
	}
	tree, err := repo.WriteTreeOrEmpty(baseCommit.TreeHash, edits)
	if err != nil {
		return nil, err
	}
	c, err := describe(ctx, repo, base, baseCommit.TreeHash, tree)
	if err != nil {
		return nil, err
	}
	c.entries = byPath
	return c, nil
}

// collect is scan and build for a delta that needs no verification
// (tests of the collector itself).
func collect(ctx context.Context, repo *refs.Repo, base plumbing.Hash, d sandbox.Delta) (*collected, error) {
	entries, err := scan(ctx, d)
	if err != nil {
		return nil, err
	}
	return build(ctx, repo, base, d, entries)
}

// storeFile hashes a file of the delta and writes it as a blob unless the
// object database already has it (most files of a full work tree).
func storeFile(repo *refs.Repo, d sandbox.Delta, e sandbox.Entry) (plumbing.Hash, error) {
	f, err := sandbox.OpenEntry(d, e)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer f.Close()
	h, err := refs.HashBlob(f, e.Size)
	if err != nil || repo.HasObject(h) {
		return h, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		return plumbing.ZeroHash, err
	}
	return repo.WriteBlobFrom(f, e.Size, h)
}

// describe computes the manifest and the canonical patch from base to result.
func describe(ctx context.Context, repo *refs.Repo, base, baseTree, tree plumbing.Hash) (*collected, error) {
	files, err := changedFiles(repo, baseTree, tree)
	if err != nil {
		return nil, err
	}
	m := &verify.Manifest{Version: verify.ManifestVersion, Base: base.String(), BaseTree: baseTree.String(), ResultTree: tree.String(), Files: files}
	patch, err := canonicalPatch(ctx, repo, baseTree, tree)
	if err != nil {
		return nil, err
	}
	return &collected{Tree: tree, Manifest: m, Patch: patch}, nil
}

// changedFiles is the manifest's list of changes from baseTree to tree.
func changedFiles(repo *refs.Repo, baseTree, tree plumbing.Hash) ([]verify.FileChange, error) {
	changes, err := repo.DiffTrees(baseTree, tree)
	if err != nil {
		return nil, err
	}
	files := make([]verify.FileChange, 0, len(changes))
	for _, c := range changes {
		files = append(files, verify.FileChange{
			Path: c.Path, Status: c.Status,
			OldMode: modeString(c.OldMode), NewMode: modeString(c.NewMode),
			OldBlob: c.OldBlob.String(), NewBlob: c.NewBlob.String(),
		})
	}
	return files, nil
}

func modeString(m filemode.FileMode) string {
	return fmt.Sprintf("%06o", uint32(m))
}

// canonicalPatch is the patch whose digest is recorded: git's own binary,
// full-index diff of two trees, with every option that user configuration
// could change pinned on the command line.
func canonicalPatch(ctx context.Context, repo *refs.Repo, a, b plumbing.Hash) ([]byte, error) {
	return repo.Git(ctx, nil, "-c", "diff.suppressBlankEmpty=false",
		"diff-tree", "-p", "-U3", "-O/dev/null", "--inter-hunk-context=0", "--binary", "--full-index", "--no-renames",
		"--no-ext-diff", "--no-textconv", "--no-color", "--diff-algorithm=myers", "--indent-heuristic",
		"--src-prefix=a/", "--dst-prefix=b/", "--no-abbrev", a.String(), b.String())
}

// summarize says what a manifest changes, for people.
func summarize(files []verify.FileChange) string {
	var a, m, d int
	for _, f := range files {
		switch f.Status {
		case "A":
			a++
		case "M":
			m++
		case "D":
			d++
		}
	}
	if len(files) == 0 {
		return "no changes"
	}
	noun := "files"
	if len(files) == 1 {
		noun = "file"
	}
	return fmt.Sprintf("%d %s changed: %d added, %d modified, %d deleted", len(files), noun, a, m, d)
}
