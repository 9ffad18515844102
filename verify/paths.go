package verify

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckPath checks one path of a result tree (slash-separated, as in a git
// tree) against the rules every changed path must pass, wherever the tree
// is later checked out: Linux, macOS (HFS+, APFS) or Windows (NTFS). It
// returns nil, or a *Finding for the most serious rule the path breaks.
func CheckPath(p string) error {
	if f := checkPath(p); f != nil {
		return f
	}
	return nil
}

func checkPath(p string) *Finding {
	switch {
	case p == "":
		return newFinding(RulePathEmpty, p, "a changed path cannot be empty")
	case p[0] == '/':
		return newFinding(RulePathAbsolute, p, "paths in a result are relative to its root")
	case strings.IndexFunc(p, isControl) >= 0:
		return newFinding(RulePathControlChar, p, "control characters (including CR and LF) are not allowed in paths")
	case !utf8.ValidString(p):
		return newFinding(RulePathInvalidUTF8, p, "paths must be valid UTF-8")
	case strings.Contains(p, `\`):
		return newFinding(RulePathBackslash, p, `Windows reads "\" as a directory separator`)
	}
	parts := strings.Split(p, "/")
	if slices.Contains(parts, "..") {
		return newFinding(RulePathDotDot, p, `a ".." component climbs out of the tree`)
	}
	for _, c := range parts {
		if isDotGit(c) {
			return newFinding(RulePathDotGit, p, "component %q is .git on a case-insensitive, HFS+ or NTFS file system", c)
		}
	}
	for _, c := range parts {
		if c == "" || c == "." {
			return newFinding(RulePathMalformed, p, `empty and "." components (and a trailing "/") are not allowed`)
		}
		if foldName(c) == "" {
			return newFinding(RulePathMalformed, p, "component %q is empty once HFS+ or Windows drop ignorable code points, trailing dots and spaces, or a stream", c)
		}
	}
	return nil
}

// isControl reports the characters git-lease refuses in paths: C0 controls
// (CR and LF break line-based formats) and DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// IsGitmodulesPath reports whether p names the top-level .gitmodules under
// any alias a file system accepts: other case, HFS+ ignorable code points,
// NTFS trailing dots and spaces, an NTFS stream (".gitmodules::$DATA") or an
// 8.3 short name ("GITMOD~1", "GI7EBA~1"). Only the top-level file
// configures submodules, so nested paths report false.
func IsGitmodulesPath(p string) bool {
	return !strings.Contains(p, "/") && isGitmodulesName(p)
}

func isGitmodulesName(c string) bool {
	f := foldName(c)
	if f == ".gitmodules" {
		return true
	}
	// The usual short name: six characters, "~", and 1 to 4.
	if len(f) == 8 && strings.HasPrefix(f, "gitmod~") && f[7] >= '1' && f[7] <= '4' {
		return true
	}
	// Windows' fall-back short name, as git knows it: a prefix of the
	// hash-based "gi7eba", "~", then digits (not starting with 0) to fill
	// eight characters.
	k := strings.IndexByte(f, '~')
	return len(f) == 8 && k >= 0 && k <= 6 && strings.HasPrefix("gi7eba", f[:k]) &&
		f[k+1] >= '1' && f[k+1] <= '9' && strings.Trim(f[k+2:], "0123456789") == ""
}

// isDotGit reports whether a path component names .git on some file
// system: ".git" in any case, with HFS+ ignorables, with NTFS trailing dots,
// spaces or a stream, or the NTFS short name "git~1".
func isDotGit(c string) bool {
	f := foldName(c)
	return f == ".git" || f == "git~1"
}

// foldName maps a path component to a key that is equal for names a
// case-insensitive, HFS+ or NTFS file system may treat as one. It is a
// superset of git's is_hfs_dotgit and is_ntfs_dotgit foldings, applied
// together, so a name that combines both tricks is caught too.
func foldName(c string) string {
	f := strings.Map(func(r rune) rune {
		if isHFSIgnorable(r) {
			return -1
		}
		// Lower of upper joins runes that NTFS upper-cases alike
		// (ſ and s, ı and i) as well as plain ASCII case.
		return unicode.ToLower(unicode.ToUpper(r))
	}, c)
	f, _, _ = strings.Cut(f, ":") // an NTFS alternate data stream names the file itself
	return strings.TrimRight(f, ". ")
}

// isHFSIgnorable reports the code points HFS+ drops from names, as listed
// by git's next_hfs_char.
func isHFSIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// foldPath folds every component of p, for comparing paths as a
// case-insensitive file system would.
func foldPath(p string) string {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		parts[i] = foldName(c)
	}
	return strings.Join(parts, "/")
}
