// Package refstest makes real git repositories for tests, with pinned
// identities and dates so that every hash is stable, and builds the
// programs tests run (git-lease and the stand-ins in testdata).
package refstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env pins git's identity, dates and configuration for reproducible hashes.
var Env = []string{
	"GIT_AUTHOR_NAME=Ada Lease", "GIT_AUTHOR_EMAIL=ada@example.com",
	"GIT_COMMITTER_NAME=Ada Lease", "GIT_COMMITTER_EMAIL=ada@example.com",
	"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
}

// Setenv applies Env to the test process (and so to every git it runs).
func Setenv(t testing.TB) {
	for _, kv := range Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Git runs git in dir and returns its trimmed output, failing the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), Env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Repo creates a repository on branch main whose first commit holds files
// (path -> content; a content starting with "->" makes a symlink), and
// returns its work tree.
func Repo(t testing.TB, files map[string]string) string {
	t.Helper()
	Setenv(t)
	dir := filepath.Join(t.TempDir(), "repo")
	Git(t, "", "init", "-q", "-b", "main", dir)
	Write(t, dir, files)
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
	return dir
}

// Write creates files under dir (a content starting with "->" makes a symlink).
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, full)
		} else {
			err = os.WriteFile(full, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestTag is the build tag of test builds: it compiles in the switches
// (GIT_LEASE_FAULT, GIT_LEASE_TEST_ID_SEED) that release builds leave out.
const TestTag = "gitleasetest"

// Build builds the Go program at pkg, a path from the module root such as
// ./testdata/crabbox-standin, with TestTag, as dir/name and returns that
// path. Under go test -race it builds with -race too.
func Build(dir, name, pkg string) (string, error) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	path := filepath.Join(dir, name)
	args := []string{"build", "-tags", TestTag, "-o", path}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, pkg)...)
	build.Dir = strings.TrimSpace(string(root))
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	return path, nil
}
