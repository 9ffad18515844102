package verify

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func FuzzCheckPath(f *testing.F) {
	for _, seed := range []string{
		"src/git.go", "../x", "/etc/passwd", "a/../../x", ".git/hooks/pre-commit", ".GIT/config",
		".git\u200c/config", "GIT~1/config", ".git./config", ".git /config", ".git::$INDEX_ALLOCATION/x",
		"a\nb", "a\rb", `a\b`, "a\xffb", "a//b", "a/./b", "x.git", "\ufeff.gIt", ".gitmodules", "gi7eba~1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := CheckPath(p)
		if err != nil {
			var fd *Finding
			if !errors.As(err, &fd) || fd.Rule == "" || fd.Path != p || fd.Severity == "" {
				t.Fatalf("CheckPath(%q) = %#v, want a complete *Finding", p, err)
			}
			return
		}
		if strings.IndexFunc(p, isControl) >= 0 || strings.Contains(p, `\`) || path.Clean(p) != p || path.IsAbs(p) || strings.HasPrefix(p, "../") || p == ".." {
			t.Fatalf("CheckPath accepted %q", p)
		}
		for _, c := range strings.Split(p, "/") {
			if gitSaysDotGit(c) {
				t.Fatalf("CheckPath accepted %q, whose component %q git reads as .git", p, c)
			}
		}
	})
}

// gitSaysDotGit is a literal reading of git's is_hfs_dotgit and
// is_ntfs_dotgit (path.c, utf8.c) for one component, kept apart from the
// code under test so each checks the other.
func gitSaysDotGit(c string) bool {
	hfs := strings.Map(func(r rune) rune {
		switch r {
		case 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
			0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f, 0xfeff:
			return -1
		}
		return r
	}, c)
	if len(hfs) == 4 && hfs[0] == '.' && strings.ToLower(hfs[1:]) == "git" && isASCII(hfs) {
		return true
	}
	var rest string
	switch {
	case len(c) >= 4 && c[0] == '.' && strings.EqualFold(c[1:4], "git") && isASCII(c[:4]):
		rest = c[4:]
	case len(c) >= 5 && strings.EqualFold(c[:3], "git") && isASCII(c[:3]) && c[3:5] == "~1":
		rest = c[5:]
	default:
		return false
	}
	for _, r := range rest {
		if r == ':' {
			return true
		}
		if r != '.' && r != ' ' {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
