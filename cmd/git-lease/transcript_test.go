package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmdtest"

	"github.com/git-lease/git-lease/refs/refstest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.ct with the output the commands give now")

// binDir holds the git-lease binary built for this test run.
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "git-lease-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// The stand-ins are built next to git-lease; Crabbox's as crabbox.
	for name, pkg := range map[string]string{"git-lease": "./cmd/git-lease", "herdr-standin": "./testdata/herdr-standin", "crabbox": "./testdata/crabbox-standin"} {
		if _, err := refstest.Build(dir, name, pkg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := gateFixture(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(gateRoot)
	os.RemoveAll(dir)
	os.Exit(code)
}

// transcriptEnv is the environment of every transcript: the built binaries
// first on PATH (so `git lease` and `crabbox` find them), a private HOME and
// config, pinned identities and dates, seeded lease IDs, so that output is
// stable, and the Crabbox stand-in's provider in ${ROOTDIR}/cloud with no
// knob set. It is set again for each file, undoing what a transcript's
// setenv changed.
func transcriptEnv(t *testing.T, root, path string) {
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+path)
	refstest.Setenv(t)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(root, "gitconfig"))
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "home", ".config"))
	t.Setenv("GIT_LEASE_TEST_ID_SEED", "transcript")
	standinEnv(t, filepath.Join(root, "cloud"))
}

func TestTranscripts(t *testing.T) {
	ts, err := cmdtest.Read(filepath.Join("..", "..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	ts.Commands["git-lease"] = cmdtest.Program(filepath.Join(binDir, "git-lease"))
	ts.Commands["git"] = cmdtest.Program(lookPath(t, "git"))
	ts.Commands["exists"] = existsCmd
	ts.Commands["fixture"] = fixtureCmd
	ts.Commands["crabbox-calls"] = crabboxCallsCmd
	ts.Commands["crabbox-boxes"] = crabboxBoxesCmd
	gitPath := lookPath(t, "git")
	path := os.Getenv("PATH")
	keys, err := filepath.Abs(filepath.Join("..", "..", "testdata", "keys"))
	if err != nil {
		t.Fatal(err)
	}
	ts.Setup = func(root string) error {
		transcriptEnv(t, root, path)
		// ${ROOTDIR}/nobwrap is a PATH with git and git-lease but no bwrap.
		nobwrap := filepath.Join(root, "nobwrap")
		if err := os.Mkdir(nobwrap, 0o755); err != nil {
			return err
		}
		for name, target := range map[string]string{"git": gitPath, "git-lease": filepath.Join(binDir, "git-lease")} {
			if err := os.Symlink(target, filepath.Join(nobwrap, name)); err != nil {
				return err
			}
		}
		if err := installTestKey(keys, filepath.Join(root, "home", ".config", "git-lease", "keys")); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, "gitconfig"), []byte("[init]\n\tdefaultBranch = main\n"), 0o644)
	}
	ts.Run(t, *update)
}

func lookPath(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is needed by the transcripts: %v", name, err)
	}
	return p
}

// existsCmd prints, for each path argument, whether something is there
// (without following a symlink at the end).
func existsCmd(args []string, _ string) ([]byte, error) {
	var out []byte
	for _, p := range args {
		_, err := os.Lstat(p)
		out = fmt.Appendf(out, "%s: %v\n", p, err == nil)
	}
	return out, nil
}

// installTestKey gives the transcripts a fixed signing key
// (testdata/keys, made for tests only), so that signatures, and so commit
// hashes, are the same in every run: ed25519 signatures are deterministic.
func installTestKey(from, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"git-lease_ed25519", "git-lease_ed25519.pub"} {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
