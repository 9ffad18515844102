package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixtureDir holds the repositories transcripts start from, one file each,
// so that a reviewer reads what a transcript starts from in one place. (An
// absolute path: transcripts change the directory.)
var fixtureDir, _ = filepath.Abs(filepath.Join("..", "..", "testdata", "fixtures"))

// A fixture describes one commit. Its file is a header of "key: value"
// lines, then each file of the commit as a "-- path --" line followed by
// its content:
//
//	commit: base                  the commit's message
//	executable: a.sh b.sh         files committed with mode 100755
//	-- a.sh --
//	echo fixed > bug.txt
type fixture struct {
	message    string
	executable []string
	files      []fixtureFile
}

type fixtureFile struct{ path, content string }

// parseFixture reads a fixture's description.
func parseFixture(b []byte) (fixture, error) {
	var f fixture
	lines := strings.SplitAfter(string(b), "\n")
	i := 0
	for ; i < len(lines) && !strings.HasPrefix(lines[i], "-- "); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		switch value = strings.TrimSpace(value); {
		case ok && key == "commit":
			f.message = value
		case ok && key == "executable":
			f.executable = strings.Fields(value)
		default:
			return f, fmt.Errorf("header line %q: want commit: or executable:", line)
		}
	}
	for ; i < len(lines); i++ {
		// Each line here starts with "-- ": the loops stop only there.
		name, ok := strings.CutSuffix(strings.TrimPrefix(strings.TrimRight(lines[i], "\n"), "-- "), " --")
		if !ok || name == "" {
			return f, fmt.Errorf("line %q: want -- path --", strings.TrimRight(lines[i], "\n"))
		}
		var content strings.Builder
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "-- ") {
			i++
			content.WriteString(lines[i])
		}
		f.files = append(f.files, fixtureFile{name, content.String()})
	}
	if f.message == "" || len(f.files) == 0 {
		return f, fmt.Errorf("a fixture needs a commit: line and at least one file")
	}
	return f, nil
}

// fixtureCmd is the transcripts' `fixture NAME DIR`: a new repository DIR
// whose one commit is testdata/fixtures/NAME.txt, made with git as a
// person would (git init, add, commit), under the transcripts' pinned
// identities and dates.
func fixtureCmd(args []string, _ string) ([]byte, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("usage: fixture NAME DIR")
	}
	b, err := os.ReadFile(filepath.Join(fixtureDir, args[0]+".txt"))
	if err != nil {
		return nil, err
	}
	f, err := parseFixture(b)
	if err != nil {
		return nil, fmt.Errorf("fixture %s: %w", args[0], err)
	}
	dir := args[1]
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return nil
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if err := git("init", "-q"); err != nil {
		return nil, err
	}
	for _, file := range f.files {
		p := filepath.Join(dir, filepath.FromSlash(file.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(file.content), 0o644); err != nil {
			return nil, err
		}
	}
	if err := git("add", "."); err != nil {
		return nil, err
	}
	if len(f.executable) > 0 {
		if err := git(append([]string{"update-index", "--chmod=+x"}, f.executable...)...); err != nil {
			return nil, err
		}
	}
	return nil, git("commit", "-q", "-m", f.message)
}

func TestFixtureDescriptions(t *testing.T) {
	f, err := parseFixture([]byte("# a comment\ncommit: base\nexecutable: a.sh\n-- a.sh --\necho a\n\n-- d/b.txt --\nb\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := fixture{message: "base", executable: []string{"a.sh"}, files: []fixtureFile{{"a.sh", "echo a\n\n"}, {"d/b.txt", "b\n"}}}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("parsed %+v, want %+v", f, want)
	}
	for _, bad := range []string{"", "commit: base\n", "-- a --\nx\n", "commit: base\nauthor: x\n-- a --\n", "commit: base\n-- --\n"} {
		if _, err := parseFixture([]byte(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
	// Every fixture in testdata reads.
	names, _ := filepath.Glob(filepath.Join(fixtureDir, "*.txt"))
	if len(names) == 0 {
		t.Fatal("no fixtures")
	}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err == nil {
			_, err = parseFixture(b)
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
