package crabbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/sandbox"
)

// A whole lease: the box gets the base and nothing of the dirty checkout,
// the agent runs only after Release with its own environment (and no
// variable naming a bound file a box cannot have), its exit code
// comes back, Collect brings its work back (with the base's modes and
// symlinks) and Discard leaves nothing behind, twice.
func TestLeaseEndToEnd(t *testing.T) {
	w := newWorld(t, map[string]string{
		"a.txt":         "base\n",
		"run.sh":        "#!/bin/sh\necho run\n",
		"link":          "->a.txt",
		"dir/b.txt":     "b\n",
		".crabbox.yaml": "provider: ssh\n", // the task's own config: never read
	}, "run.sh")
	refstest.Write(t, w.repo, map[string]string{"a.txt": "dirty\n", "dirty.txt": "not committed\n"})
	p, spec := w.provider(), w.spec("3f9c0a1b2d4e")
	spec.Binds = []sandbox.Bind{{Host: filepath.Join(t.TempDir(), "state"), Sandbox: "/run/lease/state", Writable: true}}

	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatalf("Create: %v", err)
	}
	id, err := p.Identity(spec)
	if err != nil || id != "cbx_3f9c0a1b2d4e" {
		t.Fatalf("Identity = %q, %v; want the requested cbx_3f9c0a1b2d4e", id, err)
	}
	if warm := w.calls("warmup"); len(warm) != 1 || argValue(warm[0].Argv, "--lease-id") != id || !strings.Contains(strings.Join(warm[0].Argv, " "), "--keep") {
		t.Fatalf("warmups: %+v", warm)
	}
	if tree := refstest.Git(t, layout(spec).seed, "rev-parse", "HEAD^{tree}"); tree != w.tree {
		t.Errorf("seed tree %s, want the base %s", tree, w.tree)
	}

	var out bytes.Buffer
	proc, err := p.Launch(t.Context(), spec, sandbox.Command{
		Argv: []string{"sh", "-c", `set -e
test "$(cat a.txt)" = base
test ! -e dirty.txt
test -x run.sh && test -L link
test "$GREETING" = "hello world"
test "$LEASE_ID" = 3f9c0a1b2d4e
test -z "$LEASE_STATE_FILE"
echo new > new.txt
rm dir/b.txt
echo more >> run.sh
echo to-stdout; echo to-stderr >&2
exit 3`},
		Env:    []string{"GREETING=hello world", "LEASE_STATE_FILE=/run/lease/state"},
		Output: &out,
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if n := len(w.calls("run")); n != 0 {
		t.Fatalf("crabbox run started before Release (%d calls)", n)
	}
	if err := proc.Release(); err != nil {
		t.Fatal(err)
	}
	exit, err := proc.Wait()
	if err != nil || exit.Code != 3 || exit.Bound != "" {
		t.Fatalf("Wait = %+v, %v; want exit code 3\n%s", exit, err, out.String())
	}
	for _, want := range []string{"to-stdout", "to-stderr"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(layout(spec).env); !os.IsNotExist(err) {
		t.Errorf("the agent's env profile outlived the run: %v", err)
	}

	if err := p.Collect(t.Context(), spec); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	got := map[string]string{}
	err = sandbox.Walk(deltaOf(p, spec), func(e sandbox.Entry) error {
		got[e.Path] = e.Kind.String() + " " + e.Mode.Perm().String() + " " + e.Target
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		".crabbox.yaml": "file -rw-r--r-- ",
		"a.txt":         "file -rw-r--r-- ",
		"dir":           "directory -rwxr-xr-x ",
		"link":          "symlink -rwxrwxrwx a.txt",
		"new.txt":       "file -rw-r--r-- ",
		"run.sh":        "file -rwxr-xr-x ",
	}
	checkDelta(t, got, want)
	if data, _ := os.ReadFile(filepath.Join(deltaOf(p, spec).Root, "run.sh")); !strings.HasSuffix(string(data), "more\n") {
		t.Errorf("run.sh came back as %q", data)
	}

	for i := range 2 {
		if err := p.Discard(t.Context(), spec); err != nil {
			t.Fatalf("Discard #%d: %v", i+1, err)
		}
	}
	if _, err := os.Stat(spec.Dir); !os.IsNotExist(err) {
		t.Errorf("the lease's directory is still there: %v", err)
	}
	if boxes := w.boxes(); len(boxes) != 0 {
		t.Errorf("boxes left: %v", boxes)
	}
	for _, inv := range w.invocations() {
		if inv.Config != layout(spec).config || inv.State != layout(spec).state {
			t.Errorf("crabbox %v ran with CRABBOX_CONFIG=%q XDG_STATE_HOME=%q, not the lease's own", inv.Argv, inv.Config, inv.State)
		}
		if inv.Argv[0] == "run" && inv.Cwd != layout(spec).seed {
			t.Errorf("crabbox run ran in %s, not the seed", inv.Cwd)
		}
	}
}

// The config file holds the provider and lifetime, is private, and sits
// outside the seed repository.
func TestConfigFile(t *testing.T) {
	spec := sandbox.Spec{ID: "0123456789ab", Dir: t.TempDir()}
	p := Provider{CrabboxProvider: "local-container", TTL: 90 * time.Minute, IdleTimeout: 10 * time.Minute}
	if err := p.prepare(spec); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(layout(spec).config)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"provider: local-container\n", "lease:\n  ttl: 1h30m0s\n  idleTimeout: 10m0s\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("config lacks %q:\n%s", want, data)
		}
	}
	if info, _ := os.Stat(layout(spec).config); info.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", info.Mode().Perm())
	}
	if rel, _ := filepath.Rel(layout(spec).seed, layout(spec).config); !strings.HasPrefix(rel, "..") {
		t.Errorf("config %s is inside the seed", layout(spec).config)
	}
}

// Collect refuses a copy larger than MaxCopyBytes, and a slow copy ends
// with its context.
func TestCollectBounds(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	p, spec := w.provider(), w.spec("aaaaaaaaaaaa")
	if err := p.Collect(t.Context(), spec); err == nil {
		t.Fatal("Collect before Create succeeded")
	}
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if err := p.Collect(t.Context(), spec); err == nil || !strings.Contains(err.Error(), "no finished crabbox run") {
		t.Fatalf("Collect before a run = %v", err)
	}
	if _, err := runAgent(t, p, spec, sandbox.Command{Argv: []string{"sh", "-c", "head -c 300000 /dev/zero > big"}}); err != nil {
		t.Fatal(err)
	}
	p.MaxCopyBytes = 100000
	if err := p.Collect(t.Context(), spec); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversize Collect = %v", err)
	}
	if _, err := os.Stat(layout(spec).incoming); !os.IsNotExist(err) {
		t.Errorf("the refused copy was kept: %v", err)
	}

	t.Setenv("STANDIN_CRABBOX_CP_DELAY", "2s")
	p.MaxCopyBytes = 0
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := p.Collect(ctx, spec); err == nil {
		t.Fatal("a copy slower than its context succeeded")
	}
	if _, err := os.Stat(deltaOf(p, spec).Root); !os.IsNotExist(err) {
		t.Errorf("a failed Collect left a delta: %v", err)
	}
	t.Setenv("STANDIN_CRABBOX_CP_DELAY", "")
	if err := p.Collect(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spec.Dir); !os.IsNotExist(err) {
		t.Errorf("the lease's directory is still there: %v", err)
	}
}

// A command with a Dir starts in that directory of the box's copy, whatever
// its name, and runs its argv as given.
func TestLaunchStartsInDir(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "TOPFILE\n", "my dir/$x;'/a.txt": "DEEPFILE\n"})
	p, spec := w.provider(), w.spec("bbbbbbbbbbbb")
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Discard(context.Background(), spec) })
	var out bytes.Buffer
	exit, err := runAgent(t, p, spec, sandbox.Command{Dir: "my dir/$x;'", Argv: []string{"cat", "a.txt"}, Output: &out})
	if err != nil || exit.Code != 0 {
		t.Fatalf("Wait = %+v, %v\n%s", exit, err, out.String())
	}
	if !strings.Contains(out.String(), "DEEPFILE") || strings.Contains(out.String(), "TOPFILE") {
		t.Errorf("the agent read %q, not my dir/$x;'/a.txt", out.String())
	}
}

// Nothing under .crabbox/ is ever part of a result: not what the agent
// writes there, not the failure bundle Crabbox writes into the seed's
// .crabbox/captures/ when the agent fails, and a .crabbox/ the repository
// commits comes back as it is in the base.
func TestCrabboxOwnFilesAreNoResult(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n", ".crabbox/keep.txt": "keep\n"})
	p, spec := w.provider(), w.spec("0123456789ab")
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	exit, err := runAgent(t, p, spec, sandbox.Command{Argv: []string{"sh", "-c",
		`echo b > b.txt; echo changed > .crabbox/keep.txt; echo x > .crabbox/agent.txt; mkdir -p sub/.crabbox; echo y > sub/.crabbox/z; exit 1`}})
	if err != nil || exit.Code != 1 {
		t.Fatalf("run = %+v, %v", exit, err)
	}
	if err := p.Collect(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := sandbox.Walk(deltaOf(p, spec), func(e sandbox.Entry) error { got = append(got, e.Path); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{".crabbox", ".crabbox/keep.txt", "a.txt", "b.txt", "sub", "sub/.crabbox", "sub/.crabbox/z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("delta = %v, want %v", got, want)
	}
	if data, _ := os.ReadFile(filepath.Join(deltaOf(p, spec).Root, ".crabbox", "keep.txt")); string(data) != "keep\n" {
		t.Errorf(".crabbox/keep.txt came back as %q, want the base's", data)
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
}

// Crabbox's sync would leave out committed files under node_modules,
// .cache, .venv (at any depth) and what a committed .crabboxignore names.
// The box gets the base by content instead, so it has them all, and a file
// it deleted is deleted, whatever its path.
func TestBoxGetsEveryBaseFile(t *testing.T) {
	w := newWorld(t, map[string]string{
		"a.txt":                   "a\n",
		"gone.txt":                "g\n",
		"node_modules/m/index.js": "m\n",
		"web/.cache/c":            "c\n",
		"py/.venv/bin/python":     "p\n",
		"secret/s.txt":            "s\n",
		".crabboxignore":          "secret\n",
	})
	p, spec := w.provider(), w.spec("0123456789ab")
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	exit, err := runAgent(t, p, spec, sandbox.Command{Argv: []string{"sh", "-c",
		`test -e node_modules/m/index.js && test -e secret/s.txt && test -e py/.venv/bin/python || exit 9; rm gone.txt web/.cache/c; mkdir -p node_modules/n; echo n > node_modules/n/new.js`}})
	if err != nil || exit.Code != 0 {
		t.Fatalf("run = %+v, %v", exit, err)
	}
	if err := p.Collect(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := sandbox.Walk(deltaOf(p, spec), func(e sandbox.Entry) error {
		if e.Kind.String() != "directory" {
			got = append(got, e.Path)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{".crabboxignore", "a.txt", "node_modules/m/index.js", "node_modules/n/new.js", "py/.venv/bin/python", "secret/s.txt"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("delta files = %v, want %v", got, want)
	}
	if data, _ := os.ReadFile(filepath.Join(deltaOf(p, spec).Root, "node_modules", "m", "index.js")); string(data) != "m\n" {
		t.Errorf("node_modules/m/index.js came back as %q", data)
	}
	if err := p.Discard(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
}

// checkDelta compares what a walk of a delta found (path -> a description
// of the entry) with what a test wants.
func checkDelta(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("delta = %v, want %v", got, want)
	}
	for path, kind := range want {
		if got[path] != kind {
			t.Errorf("delta %s = %q, want %q", path, got[path], kind)
		}
	}
}

// deltaOf is p's Delta, which never fails for Crabbox.
func deltaOf(p Provider, spec sandbox.Spec) sandbox.Delta {
	d, _ := p.Delta(spec)
	return d
}

// The result comes back by content, as a tarball of the box's tree: a
// mode-only change and a symlink changed, made or removed in the box come
// back as they are, and so does a hard link (as a file of its own).
func TestModesAndSymlinksComeBack(t *testing.T) {
	w := newWorld(t, map[string]string{
		"tool.sh":  "#!/bin/sh\n",
		"plain.sh": "#!/bin/sh\n",
		"a.txt":    "a\n",
		"link":     "->a.txt",
		"old-link": "->a.txt",
	}, "tool.sh")
	p, spec := w.provider(), w.spec("0123456789ab")
	if err := p.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Discard(context.Background(), spec) })
	exit, err := runAgent(t, p, spec, sandbox.Command{Argv: []string{"sh", "-c", `set -e
test -x tool.sh && test ! -x plain.sh && test "$(readlink link)" = a.txt
chmod -x tool.sh; chmod +x plain.sh
ln -sfn tool.sh link; ln -s ../elsewhere new-link; rm old-link; ln a.txt hard.txt`}})
	if err != nil || exit.Code != 0 {
		t.Fatalf("run = %+v, %v", exit, err)
	}
	if err := p.Collect(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if err := sandbox.Walk(deltaOf(p, spec), func(e sandbox.Entry) error {
		got[e.Path] = e.Kind.String() + " " + e.Mode.Perm().String() + " " + e.Target
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"tool.sh":  "file -rw-r--r-- ",
		"plain.sh": "file -rwxr-xr-x ",
		"a.txt":    "file -rw-r--r-- ",
		"hard.txt": "file -rw-r--r-- ",
		"link":     "symlink -rwxrwxrwx tool.sh",
		"new-link": "symlink -rwxrwxrwx ../elsewhere",
	}
	checkDelta(t, got, want)
}
