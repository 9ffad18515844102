package gitlease

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// homeInstall makes a home as npm with a user prefix and nvm leave it: an
// agent package whose program is a symlink in .npm-global/bin to a script
// run by "#!/usr/bin/env fakenode", and fakenode in nvm's bin directory,
// both on PATH (fakenode runs its script with /bin/sh). A secret lies in
// the home beside them.
func homeInstall(t *testing.T, home, agentScript string) {
	t.Setenv("HOME", home)
	pkg := filepath.Join(home, ".npm-global/lib/node_modules/@fake/agent")
	nodeBin := filepath.Join(home, ".nvm/versions/node/v1/bin")
	for _, d := range []string{filepath.Join(pkg, "bin"), filepath.Join(pkg, "node_modules/dep"), filepath.Join(home, ".npm-global/bin"), nodeBin} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@fake/agent"}`), 0o644))
	must(t, os.WriteFile(filepath.Join(pkg, "node_modules/dep/lib.sh"), []byte("echo dep-loaded\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(pkg, "bin/agent.js"), []byte("#!/usr/bin/env fakenode\n"+agentScript), 0o755))
	must(t, os.Symlink("../lib/node_modules/@fake/agent/bin/agent.js", filepath.Join(home, ".npm-global/bin/fake-agent")))
	must(t, os.WriteFile(filepath.Join(nodeBin, "fakenode"), []byte("#!/bin/sh\nexec /bin/sh \"$@\"\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(home, "secret"), []byte("home-secret\n"), 0o600))
	t.Setenv("PATH", filepath.Join(home, ".npm-global/bin")+":"+nodeBin+":"+os.Getenv("PATH"))
}

func TestFindAgentBindsAnInstallUnderTheHomeNarrowly(t *testing.T) {
	home := t.TempDir()
	homeInstall(t, home, "")
	p, err := findAgent("fake-agent", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(home, ".npm-global/lib/node_modules/@fake/agent")
	nodeBin := filepath.Join(home, ".nvm/versions/node/v1/bin")
	if p.Path != filepath.Join(pkg, "bin/agent.js") || !p.ByPath || !slices.Equal(p.Binds, []string{pkg, nodeBin}) || !slices.Equal(p.PATH, []string{nodeBin}) {
		t.Fatalf("found %+v", p)
	}
	if q, err := findAgent(filepath.Join(home, ".npm-global/bin/fake-agent"), nil, true); err != nil || q.Path != p.Path {
		t.Fatalf("by its absolute path: %+v %v", q, err)
	}
	// A program directly in the home would need the whole home.
	must(t, os.WriteFile(filepath.Join(home, "loose-agent"), []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", home+":"+os.Getenv("PATH"))
	if _, err := findAgent("loose-agent", nil, true); err == nil || !strings.Contains(err.Error(), "directly in your home") {
		t.Fatalf("a program in the home itself: %v", err)
	}
	// Without its interpreter, the agent is not installed.
	must(t, os.Remove(filepath.Join(nodeBin, "fakenode")))
	if _, err := findAgent("fake-agent", nil, true); err == nil || !strings.Contains(err.Error(), "runs with fakenode, named by its #! line, which is not installed") {
		t.Fatalf("a missing interpreter: %v", err)
	}
}

func TestInstallDir(t *testing.T) {
	venv := t.TempDir()
	must(t, os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), nil, 0o644))
	for in, want := range map[string]string{
		"/h/.npm/lib/node_modules/@s/pkg/bin/x.js":                 "/h/.npm/lib/node_modules/@s/pkg",
		"/h/.npm/lib/node_modules/pkg/dist/cli.js":                 "/h/.npm/lib/node_modules/pkg",
		"/h/.npm/lib/node_modules/pkg/node_modules/dep/bin/dep.js": "/h/.npm/lib/node_modules/pkg",
		"/h/.local/share/claude/versions/2.1.197":                  "/h/.local/share/claude/versions",
		filepath.Join(venv, "bin/aider"):                           venv,
	} {
		if got := installDir(in); got != want {
			t.Errorf("installDir(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSandboxPresetInstalledUnderTheHomeRuns runs the agent that
// homeInstall made as a preset: it runs with its interpreter and its
// package's files, and sees nothing else of the home.
func TestSandboxPresetInstalledUnderTheHomeRuns(t *testing.T) {
	repo, _ := sandboxRepo(t, map[string]string{"a": "a"}, "[agents.fake]\ncommand = [\"fake-agent\", \"{prompt}\"]\n")
	home := t.TempDir()
	homeInstall(t, home, `. "$(dirname "$0")/../node_modules/dep/lib.sh"
echo "$1" > done.txt
`+attempt("home-secret", "cat "+filepath.Join(home, "secret"))+attempt("home-listing", "ls "+home+"/.npm-global/bin"))
	x, out := runLease(t, repo, StartOptions{Agent: "fake", Prompt: "made-it"}, "")
	requireBlocked(t, out, "home-secret", "home-listing")
	if !strings.Contains(out, "dep-loaded") || x.Lease.State != Review || x.Lease.Result == nil || x.Lease.Result.Summary != "1 file changed: 1 added, 0 modified, 0 deleted" {
		t.Fatalf("state %s (%s):\n%s", x.Lease.State, x.Lease.Reason, out)
	}
	// Without its interpreter, no lease starts.
	must(t, os.Remove(filepath.Join(home, ".nvm/versions/node/v1/bin/fakenode")))
	if _, err := Start(t.Context(), repo, StartOptions{Mode: Sandboxed, Agent: "fake", Prompt: "x"}); err == nil || !strings.Contains(err.Error(), "fakenode") {
		t.Fatalf("start without the interpreter: %v", err)
	}
	if all, err := List(repo); err != nil || len(all) != 1 {
		t.Fatalf("%d leases (%v), want the first one only", len(all), err)
	}
}
