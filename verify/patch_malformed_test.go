package verify

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePatchRejectsWhatIsNotCanonical(t *testing.T) {
	g := newGitDir(t)
	a := g.write(map[string]string{"edit": "one\n\ntwo\n", "mode": "m\n", "bin": "\x00a", "old": "same content\n"})
	b := g.write(map[string]string{"edit": "one\n\nthree\n", "mode": "x:m\n", "bin": "\x00b", "old": "", "new": "same content\n", "\u00e9": "e\n"})
	canonical := string(g.patch(a, b))
	if _, err := ParsePatch([]byte(canonical)); err != nil {
		t.Fatalf("the canonical patch does not parse: %v\n%s", err, canonical)
	}
	diff := func(opts ...string) string {
		return g.git(append(append([]string{"diff-tree", "-p"}, opts...), a, b)...)
	}
	replace := func(old, new string) string {
		if !strings.Contains(canonical, old) {
			t.Fatalf("the canonical patch lacks %q:\n%s", old, canonical)
		}
		return strings.Replace(canonical, old, new, 1)
	}
	for _, tc := range []struct{ name, patch string }{
		{"a patch cut short", strings.TrimSuffix(canonical, "\n")},
		{"a hunk that lacks a line", replace("+three\n", "")},
		{"a hunk with an extra line", replace("+three\n", "+three\n+four\n")},
		{"a hunk line without a prefix", replace("-two\n", "two\n")},
		{"a hunk without a header", replace("@@ -1,3 +1,3 @@\n", "")},
		{"abbreviated blob names", diff("--binary", "--no-renames")},
		{"renames", diff("--binary", "--full-index", "-M")},
		{"binary files without --binary", diff("--full-index", "--no-renames")},
		{"colours", diff("--binary", "--full-index", "--no-renames", "--color=always")},
		{"names that are not quoted", g.git("-c", "core.quotePath=false", "diff-tree", "-p", "--binary", "--full-index", "--no-renames", a, b)},
		{"a blank context line with diff.suppressBlankEmpty", g.git("-c", "diff.suppressBlankEmpty=true", "diff-tree", "-p", "--binary", "--full-index", "--no-renames", a, b)},
		{"text before the first file", "From me\n" + canonical},
		{"two different names", replace("diff --git a/edit b/edit", "diff --git a/edit b/other")},
		{"one name quoted", replace(`diff --git "a/\303\251" "b/\303\251"`, `diff --git "a/\303\251" b/x`)},
		{"a bad escape", replace(`diff --git "a/\303\251" "b/\303\251"`, `diff --git "a/\403" "b/\403"`)},
		{"a --- line for another file", replace("--- a/edit\n", "--- a/other\n")},
		{"a missing +++ line", replace("+++ b/edit\n", "")},
		{"a mode on the index line of an addition", replace("\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..", "\nnew file mode 100644\nindex 100644 0000000000000000000000000000000000000000..")},
		{"an old mode without a new mode", replace("new mode 100755\n", "")},
		{"a change of type printed as a mode change", replace("new mode 100755\n", "new mode 120000\n")},
		{"a mode git never writes", replace("new mode 100755\n", "new mode 100777\n")},
		{"a text edit without its body", replace("--- a/edit\n+++ b/edit\n@@ -1,3 +1,3 @@\n one\n \n-two\n+three\n", "")},
		{"a binary line of the wrong length", replace("GIT binary patch\nliteral 2\n", "GIT binary patch\nliteral 2\nz\n")},
		{"a binary patch with one hunk", replace("\n\nliteral 2\n", "\n\n")},
		{"an unknown header", replace("new file mode 100644\n", "similarity index 100%\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := ParsePatch([]byte(tc.patch))
			if !errors.Is(err, ErrBadPatch) {
				t.Fatalf("ParsePatch = %+v, %v; want ErrBadPatch\n%s", files, err, tc.patch)
			}
		})
	}
}
