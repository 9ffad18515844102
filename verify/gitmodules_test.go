package verify

import (
	"strings"
	"testing"
)

func TestCheckGitmodulesAcceptsWhatGitWrites(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"nothing", ""},
		{"one submodule", "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n"},
		{"a relative url and a branch", "[submodule \"a/b\"]\n\tpath = third_party/b\n\turl = ../b.git\n\tbranch = main\n"},
		{"comments, CRLF and a byte order mark", "\ufeff# c\r\n[Submodule \"x\"] ; c\r\n  PATH = \"x y\" # c\r\n\turl=git@example.com:x.git\r\n"},
		{"an update mode that runs nothing", "[submodule \"x\"]\n\tupdate = rebase\n"},
		{"other sections, which git ignores", "[core]\n\tfoo = -bar\n[submodule]\n\tpath = ../x\n"},
		{"escapes in names and values", "[submodule \"a\\\"b\"]\n\tpath = \"a\\\"b\"x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fs := CheckGitmodules([]byte(tc.content)); len(fs) != 0 {
				t.Fatalf("CheckGitmodules = %+v, want none", fs)
			}
		})
	}
}

func TestCheckGitmodulesRejectsSubmoduleTricks(t *testing.T) {
	for _, tc := range []struct{ name, content, detail string }{
		{"a name that climbs out of .git/modules", "[submodule \"../../hooks\"]\n\tpath = x\n", `has a ".." component`},
		{"a name that climbs with backslashes", "[submodule \"a\\\\..\\\\..\\\\x\"]\n\tpath = x\n", `has a ".." component`},
		{"a name that looks like an option", "[submodule \"-x\"]\n\tpath = x\n", "option"},
		{"an empty name", "[submodule \"\"]\n\tpath = x\n", "is empty"},
		{"a path with dot-dot", "[submodule \"x\"]\n\tpath = ../x\n", `".."`},
		{"a path into .git", "[submodule \"x\"]\n\tpath = .GIT/hooks\n", ".git"},
		{"a path that looks like an option", "[submodule \"x\"]\n\tpath = -x\n", "option"},
		{"a path with a quoted trailing CR", "[submodule \"x\"]\n\tpath = \"x\r\"\n", "control"},
		{"a path with no value", "[submodule \"x\"]\n\tpath\n", "empty"},
		{"a url that looks like an option", "[submodule \"x\"]\n\turl = --upload-pack=touch${IFS}/tmp/x\n", "option"},
		{"a url with an encoded newline", "[submodule \"x\"]\n\turl = https://a%0a@example.com/\n", "control"},
		{"a url with an escaped newline", "[submodule \"x\"]\n\turl = \"https://a\\nb\"\n", "control"},
		{"an update that runs a command", "[submodule \"x\"]\n\tUpdate = \"!sh -c evil\"\n", "runs a command"},
		{"a line continuation", "[submodule \"x\"]\n\tpath = a\\\nb\n", "continuation"},
		{"an unknown escape", "[submodule \"x\"]\n\tpath = a\\qb\n", "escape"},
		{"an unclosed quote", "[submodule \"x\"]\n\tpath = \"a\n", "quote"},
		{"an unclosed section name", "[submodule \"x]\n", "quote"},
		{"an unquoted section name", "[submodule x]\n", "quoted"},
		{"the old dotted section syntax", "[submodule.x]\n\tpath = x\n", "section header"},
		{"a variable on the header line", "[submodule \"x\"] path = ../x\n", "after a section header"},
		{"a variable before any section", "path = x\n", "outside any section"},
		{"a variable name that starts with a digit", "[submodule \"x\"]\n\t1path = x\n", "letter"},
		{"a variable without an equals sign", "[submodule \"x\"]\n\tpath x\n", "="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := CheckGitmodules([]byte(tc.content))
			if len(fs) == 0 {
				t.Fatal("CheckGitmodules found nothing")
			}
			f := fs[0]
			if f.Rule != RuleGitmodules || f.Path != ".gitmodules" || f.Severity != SeverityCritical || !strings.Contains(f.Detail, tc.detail) {
				t.Fatalf("finding %+v, want rule %s with %q in its detail", f, RuleGitmodules, tc.detail)
			}
		})
	}
}

func TestParseConfigReadsValuesAsGitDoes(t *testing.T) {
	vars, err := parseConfig("[Sub \"N\\x\"]\n\tKey =  a  \t b \"  c \" # d\n\tflag\n\tq = \"#;\"\\t\\\\\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []configVar{
		{section: "sub", name: "Nx", named: true, key: "key", value: "a    b   c "},
		{section: "sub", name: "Nx", named: true, key: "flag"},
		{section: "sub", name: "Nx", named: true, key: "q", value: "#;\t\\"},
	}
	if len(vars) != len(want) {
		t.Fatalf("vars = %+v", vars)
	}
	for i := range want {
		if vars[i] != want[i] {
			t.Errorf("var %d = %+v, want %+v", i, vars[i], want[i])
		}
	}
}
