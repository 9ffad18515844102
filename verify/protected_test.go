package verify

import (
	"slices"
	"strings"
	"testing"
)

// TestProtectedTableCatchesEveryClassAtAnyDepth changes a file of each
// default entry at the top of the tree, in a subproject, and under folding
// tricks; each change is a protected-path finding that names its entry and
// why it runs code. Before the table, only exact top-level paths were
// protected and most of these classes passed.
func TestProtectedTableCatchesEveryClassAtAnyDepth(t *testing.T) {
	for _, e := range ProtectedTable {
		rest := strings.TrimPrefix(e.Path, "**/")
		inside := rest
		if strings.HasSuffix(rest, "/") {
			inside = rest + "config.yml"
		}
		for _, p := range []string{inside, "sub/" + inside, "a/b/c/" + inside, strings.ToUpper(inside)} {
			t.Run(p, func(t *testing.T) {
				var got []Finding
				for _, f := range Check(Policy{}, []Candidate{{Path: p, Mode: 0o644, Size: 1}}, nil) {
					if f.Rule == RuleProtectedPath {
						got = append(got, f)
					}
				}
				if len(got) != 1 || got[0].Path != p || !strings.Contains(got[0].Detail, e.Path) {
					t.Fatalf("findings %+v; want one protected-path finding naming %s", got, e.Path)
				}
			})
		}
	}
}

// TestProtectedEntries pins the matching rules on entries policy writes.
func TestProtectedEntries(t *testing.T) {
	for _, tc := range []struct {
		entry, path string
		want        bool
	}{
		{"**/.envrc", "x/y/.envrc", true},
		{"**/.envrc", "x/.envrc/z", false}, // a directory named .envrc is not the file
		{"**/.vscode/", "x/.vscode", true}, // the directory replaced by a file
		{"**/.cargo/config", "crate/.cargo/config", true},
		{"**/.cargo/config", "crate/cargo/config", false},
		{".github/", "sub/.github/workflows/x.yml", false}, // no "**/": from the top only
		{".github/", ".github/workflows/x.yml", true},
		{".gitattributes", "sub/.gitattributes", false},
		{"deploy/prod.yml", "deploy/prod.yml", true},
		{"**/.gitattributes", "sub/.gitattributes.", true}, // NTFS drops the dot
		{"**/.gitattributes", "sub/.git\u200cattributes", true},
		{"**/", "anything", false},
	} {
		if got := protectedBy([]string{tc.entry}, tc.path) != ""; got != tc.want {
			t.Errorf("entry %q, path %q: protected %v, want %v", tc.entry, tc.path, got, tc.want)
		}
	}
	if !slices.Equal(DefaultPolicy().Protected, DefaultProtected) {
		t.Fatal("the default policy protects something other than the table")
	}
}

// TestOrdinaryPathsAreNotProtected keeps the table from swallowing code:
// names that merely contain a protected name pass.
func TestOrdinaryPathsAreNotProtected(t *testing.T) {
	for _, p := range []string{"src/github.go", "docs/envrc.md", "npmrc", "x/.npmrc.example", "cargo/config.rs", "vscode/x", "Jenkinsfile.md"} {
		if e := protectedBy(DefaultProtected, p); e != "" {
			t.Errorf("%s is protected by %s", p, e)
		}
	}
}
