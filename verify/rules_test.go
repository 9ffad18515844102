package verify

import (
	"cmp"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func file(p string) Candidate { return Candidate{Path: p, Mode: 0o644, Size: 10} }

func link(p, target string) Candidate {
	return Candidate{Path: p, Kind: Symlink, Mode: fs.ModeSymlink | 0o777, Size: int64(len(target)), Target: target}
}

// treeOf is the result tree of a change that only adds: every changed path
// and the directories above it.
func treeOf(changed []Candidate) []string {
	var out []string
	for _, c := range changed {
		for p := c.Path; p != "." && p != "/" && p != ""; p = path.Dir(p) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func manyFiles(n int) []Candidate {
	out := make([]Candidate, n)
	for i := range out {
		out[i] = Candidate{Path: fmt.Sprintf("gen/f%06d", i), Size: 1}
	}
	return out
}

func TestCheckRejectsTheAttackCorpusWithTheRightRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  Policy
		changed []Candidate
		tree    []string // nil: treeOf(changed)
		rules   []string // every rule reported, sorted
	}{
		{"a leading dot-dot", Policy{}, []Candidate{file("../x")}, nil, []string{RulePathDotDot}},
		{"an absolute path", Policy{}, []Candidate{file("/etc/passwd")}, nil, []string{RulePathAbsolute}},
		{"a dot-dot that climbs out", Policy{}, []Candidate{file("a/../../x")}, nil, []string{RulePathDotDot}},
		{"a git hook", Policy{}, []Candidate{file(".git/hooks/pre-commit")}, nil, []string{RulePathDotGit}},
		{"an upper-case .GIT", Policy{}, []Candidate{file(".GIT/config")}, nil, []string{RulePathDotGit}},
		{".git with an HFS+ ignorable", Policy{}, []Candidate{file(".git\u200c/config")}, nil, []string{RulePathDotGit}},
		{"the NTFS short name of .git", Policy{}, []Candidate{file("GIT~1/config")}, nil, []string{RulePathDotGit}},
		{".git with a trailing dot", Policy{}, []Candidate{file(".git./config")}, nil, []string{RulePathDotGit}},
		{".git with a trailing space", Policy{}, []Candidate{file(".git /config")}, nil, []string{RulePathDotGit}},
		{"a .gitmodules change", Policy{}, []Candidate{file(".gitmodules")}, nil, []string{RuleProtectedPath, RuleSubmodule}},
		{"an upper-case .GITMODULES", Policy{}, []Candidate{file(".GITMODULES")}, nil, []string{RuleProtectedPath, RuleSubmodule}},
		{"the NTFS short name of .gitmodules", Policy{}, []Candidate{file("gitmod~1")}, nil, []string{RuleSubmodule}},
		{"a deleted .gitmodules", Policy{}, []Candidate{{Path: ".gitmodules", Deleted: true}}, nil, []string{RuleProtectedPath, RuleSubmodule}},
		{"a gitlink", Policy{}, []Candidate{{Path: "lib/sub", Kind: Gitlink}}, nil, []string{RuleSubmodule}},
		{"a symlink to /etc/passwd", Policy{}, []Candidate{link("passwd", "/etc/passwd")}, nil, []string{RuleSymlinkEscape}},
		{"a symlink that climbs out", Policy{}, []Candidate{link("a/b", "../../x")}, nil, []string{RuleSymlinkEscape}},
		{"a symlink that climbs out with backslashes", Policy{}, []Candidate{link("l", `..\x`)}, nil, []string{RuleSymlinkEscape}},
		{"a symlink to a Windows drive", Policy{}, []Candidate{link("l", "C:/Windows")}, nil, []string{RuleSymlinkEscape}},
		{"a symlink into .git", Policy{}, []Candidate{link("hooks", "../.GIT/hooks")}, nil, []string{RuleSymlinkEscape}},
		{"a symlink into a nested .git", Policy{}, []Candidate{link("a/l", "x/.git\u200c")}, nil, []string{RuleSymlinkEscape}},
		{"a symlink with dot-dot after a name", Policy{}, []Candidate{link("l", "d/../x")}, nil, []string{RuleSymlinkEscape}},
		{"a symlinked .gitmodules even when submodules are allowed", Policy{AllowSubmodules: true}, []Candidate{link(".gitmodules", "x")}, nil, []string{RuleSubmodule}},
		{"a symlinked nested .gitmodules", Policy{}, []Candidate{link("a/.GITMODULES", "x")}, nil, []string{RuleProtectedPath, RuleSubmodule}},
		{"a setuid file", Policy{}, []Candidate{{Path: "bin/x", Mode: fs.ModeSetuid | 0o755}}, nil, []string{RuleModeSetuid}},
		{"a setgid file", Policy{}, []Candidate{{Path: "bin/x", Mode: fs.ModeSetgid | 0o755}}, nil, []string{RuleModeSetuid}},
		{"a sticky file", Policy{}, []Candidate{{Path: "bin/x", Mode: fs.ModeSticky | 0o644}}, nil, []string{RuleModeSetuid}},
		{"a FIFO", Policy{}, []Candidate{{Path: "fifo", Kind: Special, Mode: fs.ModeNamedPipe | 0o644}}, nil, []string{RuleSpecialFile}},
		{"a device that claims to be a file", Policy{}, []Candidate{{Path: "dev", Mode: fs.ModeDevice | 0o644}}, nil, []string{RuleSpecialFile}},
		{"a socket", Policy{}, []Candidate{{Path: "sock", Kind: Special, Mode: fs.ModeSocket}}, nil, []string{RuleSpecialFile}},
		{"a line feed in a name", Policy{}, []Candidate{file("a\nb")}, nil, []string{RulePathControlChar}},
		{"a carriage return in a name", Policy{}, []Candidate{file("a\rb")}, nil, []string{RulePathControlChar}},
		{"A and a in one directory", Policy{}, []Candidate{file("d/A"), file("d/a")}, nil, []string{RuleCaseCollision}},
		{"a new directory that collides with an old one", Policy{}, []Candidate{file("Src/x.go")}, []string{"Src", "Src/x.go", "src", "src/y.go"}, []string{RuleCaseCollision}},
		{"names that NTFS trims into one", Policy{}, []Candidate{file("README.")}, []string{"README", "README."}, []string{RuleCaseCollision}},
		{"100,000 new files", Policy{}, manyFiles(100_000), []string{}, []string{RuleLimitFiles}},
		{"more files than a custom limit", Policy{MaxFiles: 2}, []Candidate{file("a"), file("b"), {Path: "c", Deleted: true}}, nil, []string{RuleLimitFiles}},
		{"a 2 GiB file", Policy{}, []Candidate{{Path: "big.bin", Size: 2 << 30}}, nil, []string{RuleLimitBytes}},
		{"sizes that would overflow", Policy{}, []Candidate{{Path: "a", Size: 1 << 62}, {Path: "b", Size: 1 << 62}, {Path: "c", Size: 1 << 62}}, nil, []string{RuleLimitBytes}},
		{"a negative size", Policy{}, []Candidate{{Path: "a", Size: -1}}, nil, []string{RuleLimitBytes}},
		{"more binary files than allowed", Policy{MaxBinaryFiles: 1}, []Candidate{{Path: "a", Binary: true}, {Path: "b", Binary: true}}, nil, []string{RuleLimitBinary}},
		{"a CI workflow", Policy{}, []Candidate{file(".github/workflows/ci.yml")}, nil, []string{RuleProtectedPath}},
		{"a CI workflow in upper case", Policy{}, []Candidate{file(".GITHUB/workflows/x")}, nil, []string{RuleProtectedPath}},
		{"a CI workflow behind an NTFS trailing dot", Policy{}, []Candidate{file(".github./workflows/x")}, nil, []string{RuleProtectedPath}},
		{"a CI workflow behind an HFS+ ignorable", Policy{}, []Candidate{file(".git\u200chub/workflows/x")}, nil, []string{RuleProtectedPath}},
		{"a deleted CI workflow", Policy{}, []Candidate{{Path: ".github/workflows/ci.yml", Deleted: true}}, nil, []string{RuleProtectedPath}},
		{"a protected directory replaced by a file", Policy{}, []Candidate{file(".vscode")}, nil, []string{RuleProtectedPath}},
		{"an .envrc", Policy{}, []Candidate{file(".envrc")}, nil, []string{RuleProtectedPath}},
		{"a custom protected directory", Policy{Protected: []string{"deploy/"}}, []Candidate{file("Deploy/prod.yml")}, nil, []string{RuleProtectedPath}},
		{"any symlink when symlinks are denied", Policy{DenySymlinks: true}, []Candidate{link("docs/latest", "v2")}, nil, []string{RuleSymlinkDenied}},
		{"a deleted path that climbs out", Policy{}, []Candidate{{Path: "../x", Deleted: true}}, nil, []string{RulePathDotDot}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := tc.tree
			if tree == nil {
				tree = treeOf(tc.changed)
			}
			var rules []string
			for _, f := range Check(tc.policy, tc.changed, tree) {
				if !slices.Contains(rules, f.Rule) {
					rules = append(rules, f.Rule)
				}
			}
			slices.Sort(rules)
			if !slices.Equal(rules, tc.rules) {
				t.Fatalf("rules = %v, want %v", rules, tc.rules)
			}
		})
	}
}

func TestCheckPassesOrdinaryResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  Policy
		changed []Candidate
		tree    []string
	}{
		{"a source file", Policy{}, []Candidate{file("src/git.go")}, nil},
		{"a .gitkeep", Policy{}, []Candidate{file("docs/.gitkeep")}, nil},
		{"a name ending in .git", Policy{}, []Candidate{file("x.git")}, nil},
		{"a .gitignore", Policy{}, []Candidate{file(".gitignore")}, nil},
		{"a symlink to a sibling", Policy{}, []Candidate{link("docs/latest", "v2")}, nil},
		{"a symlink up to the root", Policy{}, []Candidate{link("a/b/l", "../../x")}, nil},
		{"a symlink through a dot", Policy{}, []Candidate{link("l", "./v2/")}, nil},
		{"an executable", Policy{}, []Candidate{{Path: "run.sh", Mode: 0o755}}, nil},
		{"a deleted FIFO", Policy{}, []Candidate{{Path: "fifo", Kind: Special, Mode: fs.ModeNamedPipe, Deleted: true}}, nil},
		{"a deleted huge binary", Policy{MaxBinaryFiles: 1}, []Candidate{{Path: "a", Size: 1 << 40, Binary: true, Deleted: true}, {Path: "b", Binary: true, Deleted: true}}, nil},
		{"a collision that was already in the base", Policy{}, []Candidate{file("new")}, []string{"X", "x", "new"}},
		{"a gitlink and .gitmodules when submodules are allowed", Policy{AllowSubmodules: true}, []Candidate{{Path: "sub", Kind: Gitlink}, file(".gitmodules")}, nil},
		{"a CI workflow when nothing is protected", Policy{Protected: []string{}}, []Candidate{file(".github/workflows/ci.yml")}, nil},
		{"exactly the file limit", Policy{MaxFiles: 2}, []Candidate{file("a"), file("b")}, nil},
		{"exactly the byte limit", Policy{MaxBytes: 20}, []Candidate{file("a"), file("b")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := tc.tree
			if tree == nil {
				tree = treeOf(tc.changed)
			}
			if fs := Check(tc.policy, tc.changed, tree); len(fs) != 0 {
				t.Fatalf("Check = %+v, want no findings", fs)
			}
		})
	}
}

func TestCheckOrdersFindingsTheSameWayWhateverTheInputOrder(t *testing.T) {
	changed := []Candidate{
		link("z", "/abs"), file(".git/x"), {Path: "bin/s", Mode: fs.ModeSetuid}, file("a\nb"),
		file(".github/x"), {Path: "sub", Kind: Gitlink}, file("D/x"), file("d/y"),
	}
	want := Check(Policy{MaxFiles: 3}, changed, treeOf(changed))
	slices.Reverse(changed)
	got := Check(Policy{MaxFiles: 3}, changed, treeOf(changed))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order depends on input:\n%+v\n%+v", got, want)
	}
	if !slices.IsSortedFunc(got, func(a, b Finding) int { return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Rule, b.Rule)) }) {
		t.Fatalf("findings are not sorted by path then rule: %+v", got)
	}
	if got[0].Rule != RuleLimitFiles || got[0].Path != "" {
		t.Fatalf("the limit finding (no path) should come first: %+v", got[0])
	}
}

func TestFindingEncodesWithStableKeysAndNamesRuleAndPath(t *testing.T) {
	f := newFinding(RulePathDotGit, ".git/config", "detail")
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"rule":"path-dotgit","path":".git/config","severity":"critical","detail":"detail"}`; string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
	if got, want := f.Error(), `path-dotgit: ".git/config": detail`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if got := newFinding(RuleLimitFiles, "", "too many").Error(); got != "limit-files: too many" {
		t.Fatalf("Error() without a path = %q", got)
	}
}

// Every Rule constant of finding.go, read from the source so that a new
// one cannot be missed, has a severity.
func TestEveryRuleHasASeverity(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "finding.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	ast.Inspect(f, func(n ast.Node) bool {
		if spec, ok := n.(*ast.ValueSpec); ok {
			for i, name := range spec.Names {
				if lit, ok := spec.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(name.Name, "Rule") {
					rule, _ := strconv.Unquote(lit.Value)
					rules = append(rules, rule)
				}
			}
		}
		return true
	})
	for _, rule := range rules {
		if sev := severities[rule]; sev != SeverityCritical && sev != SeverityHigh && sev != SeverityMedium {
			t.Errorf("rule %s has severity %q", rule, sev)
		}
	}
	if len(rules) != len(severities) {
		t.Errorf("finding.go declares %d rules, and %d have a severity", len(rules), len(severities))
	}
}

func TestDefaultPolicySpellsOutTheDefaults(t *testing.T) {
	p := DefaultPolicy()
	if p.MaxFiles != DefaultMaxFiles || p.MaxBytes != DefaultMaxBytes || p.MaxBinaryFiles != DefaultMaxBinaryFiles ||
		!slices.Equal(p.Protected, DefaultProtected) || p.DenySymlinks || p.AllowSubmodules {
		t.Fatalf("DefaultPolicy() = %+v", p)
	}
	p.Protected[0] = "changed"
	if DefaultProtected[0] == "changed" {
		t.Fatal("DefaultPolicy shares DefaultProtected's backing array")
	}
}
