package gitlease

import (
	"bytes"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/sandbox"
	"github.com/git-lease/git-lease/verify"
)

// precheck looks at the delta before anything of it is read or stored: the
// rules that a path, a file type or a size alone break. For an overlay,
// every entry is a change, so counts and total size are checked too; a
// full tree is counted only after the result is built.
func precheck(p verify.Policy, layout sandbox.Layout, entries []sandbox.Entry) []verify.Finding {
	var cands []verify.Candidate
	for _, e := range entries {
		c := verify.Candidate{Path: e.Path, Mode: e.Mode, Size: e.Size, Target: e.Target}
		switch e.Kind {
		case sandbox.Dir:
			// A directory carries no content, but its name and mode
			// (setgid, sticky) are checked like a file's.
			if e.Mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) == 0 {
				if err := verify.CheckPath(e.Path); err == nil {
					continue
				}
			}
			c.Kind, c.Size = verify.File, 0
		case sandbox.Whiteout:
			c.Deleted = true
		case sandbox.Symlink:
			c.Kind = verify.Symlink
		case sandbox.Special:
			c.Kind = verify.Special
		}
		cands = append(cands, c)
	}
	if layout == sandbox.Full {
		// Limits and symlinks count changes; a full tree is not one yet.
		// (Its size is bounded by the provider's copy: Crabbox's
		// max_copy_bytes.)
		p.MaxFiles, p.MaxBytes, p.MaxBinaryFiles = 1<<31-1, 1<<62, 1<<31-1
		var out []verify.Finding
		for _, f := range verify.Check(p, cands, nil) {
			if f.Rule != verify.RuleSymlinkEscape && f.Rule != verify.RuleSymlinkDenied && f.Rule != verify.RuleProtectedPath {
				out = append(out, f)
			}
		}
		return out
	}
	return append(verify.Check(p, cands, nil), oversize(p, entries)...)
}

// oversize finds single files larger than the whole byte limit, so that
// they are never read (a 2 GiB sparse file costs nothing to make).
func oversize(p verify.Policy, entries []sandbox.Entry) []verify.Finding {
	var out []verify.Finding
	for _, e := range entries {
		if e.Kind == sandbox.File && e.Size > p.MaxBytes && p.MaxBytes > 0 {
			out = append(out, verify.Finding{Rule: verify.RuleLimitBytes, Path: e.Path, Severity: verify.SeverityMedium,
				Detail: "the file alone is larger than the result's byte limit"})
		}
	}
	return out
}

// checkResult runs every result rule on the built result: the manifest's
// changes with their modes as lstat saw them, symlink targets, binary
// content, case collisions with neighbouring paths, and .gitmodules content.
func checkResult(repo *refs.Repo, p verify.Policy, c *collected) ([]verify.Finding, error) {
	cands := make([]verify.Candidate, 0, len(c.Manifest.Files))
	var changed []string
	var gitmodules []byte
	for _, f := range c.Manifest.Files {
		changed = append(changed, f.Path)
		cand := verify.Candidate{Path: f.Path, Deleted: f.Status == "D", Mode: 0o644}
		mode := f.NewMode
		if cand.Deleted {
			mode = f.OldMode
		}
		switch mode {
		case "120000":
			cand.Kind = verify.Symlink
		case "160000":
			cand.Kind = verify.Gitlink
		case "100755":
			cand.Mode = 0o755
		}
		if e, ok := c.entries[f.Path]; ok {
			cand.Mode = e.Mode
		}
		if !cand.Deleted && cand.Kind != verify.Gitlink {
			h := plumbing.NewHash(f.NewBlob)
			size, err := repo.BlobSize(h)
			if err != nil {
				return nil, err
			}
			head, err := repo.BlobHead(h, 8000)
			if err != nil {
				return nil, err
			}
			cand.Size = size
			switch {
			case cand.Kind == verify.Symlink:
				cand.Target = string(head)
			case bytes.IndexByte(head, 0) >= 0:
				cand.Binary = true // git's own test: a NUL in the first 8000 bytes
			}
			if verify.IsGitmodulesPath(f.Path) {
				if gitmodules, err = repo.ReadBlob(h, 1<<20); err != nil {
					return nil, err
				}
			}
		}
		cands = append(cands, cand)
	}
	neighbours, err := repo.Neighbourhood(c.Tree, changed)
	if err != nil {
		return nil, err
	}
	findings := verify.Check(p, cands, neighbours)
	if p.AllowSubmodules && gitmodules != nil {
		findings = append(findings, verify.CheckGitmodules(gitmodules)...)
	}
	return findings, nil
}
