package verify

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckPathRejectsWithTheRightRule(t *testing.T) {
	for _, tc := range []struct{ name, path, rule string }{
		{"the empty path", "", RulePathEmpty},
		{"a leading dot-dot", "../x", RulePathDotDot},
		{"an absolute path", "/etc/passwd", RulePathAbsolute},
		{"a dot-dot that climbs out past a directory", "a/../../x", RulePathDotDot},
		{"a dot-dot that stays inside lexically", "a/../b", RulePathDotDot},
		{"a dot-dot after a dot", "./../x", RulePathDotDot},
		{"a .git directory", ".git/hooks/pre-commit", RulePathDotGit},
		{"a nested .git directory", "vendor/x/.git/config", RulePathDotGit},
		{".git on its own", ".git", RulePathDotGit},
		{"an upper-case .GIT", ".GIT/config", RulePathDotGit},
		{"a mixed-case .Git", "a/.Git", RulePathDotGit},
		{".git with a zero-width non-joiner", ".git\u200c/config", RulePathDotGit},
		{".git with a zero-width joiner inside", ".g\u200dit/config", RulePathDotGit},
		{".git with a byte order mark first", "\ufeff.git/config", RulePathDotGit},
		{".git with a right-to-left override", ".gi\u202et/config", RulePathDotGit},
		{".git with a nominal digit shape", ".git\u206f/config", RulePathDotGit},
		{"the NTFS short name GIT~1", "GIT~1/config", RulePathDotGit},
		{"the NTFS short name git~1 with a trailing dot", "git~1./config", RulePathDotGit},
		{".git with a trailing dot", ".git./config", RulePathDotGit},
		{".git with a trailing space", ".git /config", RulePathDotGit},
		{".git with trailing dots and spaces", ".git . ./config", RulePathDotGit},
		{".git with an NTFS stream", ".git::$INDEX_ALLOCATION/config", RulePathDotGit},
		{".GIT with a stream and a dot", ".GIT.:x/config", RulePathDotGit},
		{"HFS and NTFS tricks together", ".gi\u200ct. /config", RulePathDotGit},
		{"a line feed", "a\nb", RulePathControlChar},
		{"a carriage return", "a\rb", RulePathControlChar},
		{"a tab", "a\tb", RulePathControlChar},
		{"a NUL byte", "a\x00b", RulePathControlChar},
		{"a DEL byte", "a\x7fb", RulePathControlChar},
		{"invalid UTF-8", "a\xffb", RulePathInvalidUTF8},
		{"a backslash", `a\b`, RulePathBackslash},
		{"a backslash that hides .git", `x\.git\config`, RulePathBackslash},
		{"a double slash", "a//b", RulePathMalformed},
		{"a trailing slash", "a/", RulePathMalformed},
		{"a dot component", "a/./b", RulePathMalformed},
		{"a lone dot", ".", RulePathMalformed},
		{"three dots, which Windows trims", "a/.../b", RulePathMalformed},
		{"a lone space", "a/ /b", RulePathMalformed},
		{"a lone HFS ignorable", "a/\u200c", RulePathMalformed},
		{"a bare NTFS stream", "a/::$DATA", RulePathMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPath(tc.path)
			var f *Finding
			if !errors.As(err, &f) || f.Rule != tc.rule {
				t.Fatalf("CheckPath(%q) = %v, want rule %s", tc.path, err, tc.rule)
			}
			if f.Path != tc.path || f.Severity == "" || !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("finding %+v lacks its path, severity or rule", f)
			}
		})
	}
}

func TestCheckPathAcceptsOrdinaryPaths(t *testing.T) {
	for _, p := range []string{
		"src/git.go", "docs/.gitkeep", "x.git", ".gitignore", ".github2/x", "a.git/b", "git/x",
		"git~2", ".gitmodules", "dir with spaces/file", "\u00e9t\u00e9.txt", "..a", "a..", ".a",
		"GIT~1x", "a/.gitattributes", "a:b",
	} {
		if err := CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q) = %v, want nil", p, err)
		}
	}
}

func TestIsGitmodulesPathRecognisesAliases(t *testing.T) {
	for _, p := range []string{
		".gitmodules", ".GITMODULES", ".GitModules", ".gitmodules\u200c", "\u200d.gitmodules",
		".gitmodules.", ".gitmodules .", ".gitmodules::$DATA", "gitmod~1", "GITMOD~4",
		"gitmod~1 .", "gi7eba~1", "GI7EBA~9", "gi7eb~12", "g~123456", "~1234567",
	} {
		if !IsGitmodulesPath(p) {
			t.Errorf("IsGitmodulesPath(%q) = false, want true", p)
		}
	}
	for _, p := range []string{
		"", ".gitmodule", ".gitmodulesx", "gitmodules", "gitmod~5", "gitmod~0", "gi7eba~0",
		"gi7ebb~1", "gi7eba~1x", "g~12345", "a/.gitmodules", ".gitmodules/x", "gi7eba~12",
	} {
		if IsGitmodulesPath(p) {
			t.Errorf("IsGitmodulesPath(%q) = true, want false", p)
		}
	}
}

func TestFoldNameJoinsNamesThatFileSystemsJoin(t *testing.T) {
	for _, pair := range [][2]string{
		{"README", "readme"}, {"A", "a"}, {"x.", "x"}, {"x ", "x"}, {"s", "\u017f"},
		{"I", "\u0131"}, {"k", "\u212a"}, {"\u00c9", "\u00e9"}, {"a\u200cb", "ab"}, {"x::$DATA", "x"},
	} {
		if foldName(pair[0]) != foldName(pair[1]) {
			t.Errorf("foldName(%q) = %q, foldName(%q) = %q, want equal", pair[0], foldName(pair[0]), pair[1], foldName(pair[1]))
		}
	}
}
