package verify

import (
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
)

// Policy holds the limits and permissions a result is checked against. The
// zero Policy is the default policy: zero (or negative) limits and a nil
// Protected list mean the defaults.
type Policy struct {
	MaxFiles       int   // changed paths, deletions included
	MaxBytes       int64 // total size of added and modified content
	MaxBinaryFiles int   // added or modified binary files
	// DenySymlinks rejects every symlink; by default symlinks are allowed
	// when their target stays inside the tree.
	DenySymlinks bool
	// AllowSubmodules allows gitlinks and .gitmodules changes, even with
	// .gitmodules in Protected; the .gitmodules content must then pass
	// CheckGitmodules.
	AllowSubmodules bool
	// Protected lists paths a result may not touch (see ProtectedEntry for
	// the syntax: "dir/", "**/name"). nil means DefaultProtected; an empty,
	// non-nil list protects nothing.
	Protected []string
}

// Default limits.
const (
	DefaultMaxFiles       = 10_000
	DefaultMaxBytes       = 100 << 20 // 100 MiB
	DefaultMaxBinaryFiles = 100
)

// DefaultPolicy returns the default policy with every field spelled out.
func DefaultPolicy() Policy {
	return Policy{}.withDefaults()
}

func (p Policy) withDefaults() Policy {
	if p.MaxFiles <= 0 {
		p.MaxFiles = DefaultMaxFiles
	}
	if p.MaxBytes <= 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	if p.MaxBinaryFiles <= 0 {
		p.MaxBinaryFiles = DefaultMaxBinaryFiles
	}
	if p.Protected == nil {
		p.Protected = slices.Clone(DefaultProtected)
	}
	return p
}

// Kind is what a changed path is.
type Kind int

// Kinds of changed paths.
const (
	File    Kind = iota // a regular file
	Symlink             // a symbolic link
	Gitlink             // a submodule commit
	Special             // a device, FIFO or socket: never allowed in a result
)

// Candidate is one changed path of a result, as the collector saw it.
type Candidate struct {
	Path    string
	Kind    Kind
	Mode    fs.FileMode // as lstat saw it, with setuid, setgid, sticky and type bits
	Size    int64       // bytes of content
	Target  string      // a symlink's target
	Binary  bool        // content git would treat as binary
	Deleted bool        // the path is removed; only path rules apply
}

// Check applies the policy to a result: changed lists every changed path
// and resultPaths every path (files and directories) of the result tree.
// It returns every finding, ordered by path then rule; none means the
// result passes. Check does not read .gitmodules content: when policy allows
// submodules, the caller passes it to CheckGitmodules.
func Check(p Policy, changed []Candidate, resultPaths []string) []Finding {
	p = p.withDefaults()
	var out []Finding
	add := func(f *Finding) { out = append(out, *f) }
	var size int64
	binaries := 0
	for _, c := range changed {
		if f := checkPath(c.Path); f != nil {
			add(f)
		}
		if e := protectedBy(p.Protected, c.Path); e != "" && !(p.AllowSubmodules && IsGitmodulesPath(c.Path)) {
			why := ProtectedWhy(e)
			if why == "" {
				why = "policy protects it"
			}
			add(newFinding(RuleProtectedPath, c.Path, "%s (protected: %s); change it by hand or narrow the task", e, why))
		}
		if !p.AllowSubmodules && (c.Kind == Gitlink || IsGitmodulesPath(c.Path)) {
			add(newFinding(RuleSubmodule, c.Path, "submodules are off in policy (set AllowSubmodules to allow them)"))
		}
		if c.Deleted {
			continue
		}
		for _, f := range checkEntry(p, c) {
			add(f)
		}
		size = addSaturating(size, c.Size)
		if c.Binary {
			binaries++
		}
	}
	if len(changed) > p.MaxFiles {
		add(newFinding(RuleLimitFiles, "", "%d changed paths; policy allows %d", len(changed), p.MaxFiles))
	}
	if size > p.MaxBytes {
		add(newFinding(RuleLimitBytes, "", "%d bytes of added or modified content; policy allows %d", size, p.MaxBytes))
	}
	if binaries > p.MaxBinaryFiles {
		add(newFinding(RuleLimitBinary, "", "%d binary files; policy allows %d", binaries, p.MaxBinaryFiles))
	}
	out = append(out, caseCollisions(changed, resultPaths)...)
	return sortFindings(out)
}

// checkEntry applies the rules for what a present path is: its mode and,
// for a symlink, its target.
func checkEntry(p Policy, c Candidate) []*Finding {
	var out []*Finding
	if c.Mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
		out = append(out, newFinding(RuleModeSetuid, c.Path, "mode %v has setuid, setgid or sticky bits", c.Mode))
	}
	if c.Kind == Special || c.Mode&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeIrregular) != 0 {
		out = append(out, newFinding(RuleSpecialFile, c.Path, "mode %v: only files, symlinks and gitlinks can be in a result", c.Mode))
	}
	if c.Kind != Symlink {
		return out
	}
	if p.DenySymlinks {
		out = append(out, newFinding(RuleSymlinkDenied, c.Path, "policy denies symlinks (target %q)", c.Target))
	}
	if isGitmodulesName(path.Base(c.Path)) {
		// git refuses a symlinked .gitmodules at any depth (CVE-2018-11235).
		out = append(out, newFinding(RuleSubmodule, c.Path, "a .gitmodules file cannot be a symlink"))
	}
	if why := symlinkEscape(c.Path, c.Target); why != "" {
		out = append(out, newFinding(RuleSymlinkEscape, c.Path, "target %q %s", c.Target, why))
	}
	return out
}

// symlinkEscape says why a link's target may resolve outside the tree, or
// returns "". Targets are read as Windows would read them too ("\" is a
// separator, "C:" a drive), and .git counts as outside: a link into it lets
// whatever follows the link rewrite hooks or config. A ".." after a name is
// refused even when it stays inside lexically: that name may itself be a
// symlink to a shallower directory, and then the ".." climbs further than
// it appears.
func symlinkEscape(linkPath, target string) string {
	t := strings.ReplaceAll(target, `\`, "/")
	if strings.HasPrefix(t, "/") || (len(t) >= 2 && t[1] == ':' && isASCIILetter(t[0])) {
		return "is absolute"
	}
	depth := strings.Count(linkPath, "/") // directories above the link
	names := 0
	for _, c := range strings.Split(t, "/") {
		switch {
		case c == "" || c == ".":
		case isDotGit(c):
			return "points into .git, which is not part of the tree"
		case c != "..":
			names++
		case names > 0:
			return `has ".." after a name, which a symlinked directory can turn into an escape`
		case depth == 0:
			return "climbs out of the tree"
		default:
			depth--
		}
	}
	return ""
}

func isASCIILetter(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }

// addSaturating adds a size to a total, stopping at the largest int64 so a
// huge result cannot wrap around under the limit; a negative size is
// impossible from lstat and counts as too large.
func addSaturating(total, size int64) int64 {
	if size < 0 || total > math.MaxInt64-size {
		return math.MaxInt64
	}
	return total + size
}
