package crabbox

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/sandbox"
)

// The stand-in for Crabbox (testdata/crabbox-standin) is built once per
// test binary, into binDir.
var (
	binDir      string
	buildOnce   sync.Once
	standinPath string
	buildErr    error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crabbox-standin")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func standinBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		standinPath, buildErr = refstest.Build(binDir, "crabbox", "./testdata/crabbox-standin")
	})
	if buildErr != nil {
		t.Fatalf("the crabbox stand-in: %v", buildErr)
	}
	return standinPath
}

// world is one test's stand-in Crabbox (its provider directory and its
// invocation log) and the repository the leases are on.
type world struct {
	t         *testing.T
	root, log string
	repo      string // the developer's checkout
	tree      string // the base tree
}

// newWorld makes a repository whose base commit holds files (see
// refstest.Repo), with the paths in executable made executable, and points
// the stand-in at fresh directories. The stand-in's knobs are cleared.
func newWorld(t *testing.T, files map[string]string, executable ...string) *world {
	t.Helper()
	for _, knob := range []string{"VERSION", "AUTH", "FIXED_ID", "WARMUP", "RUN_TIMEOUT", "VANISH", "CP_DELAY", "STOP"} {
		t.Setenv("STANDIN_CRABBOX_"+knob, "")
	}
	w := &world{t: t, root: t.TempDir(), log: filepath.Join(t.TempDir(), "invocations.log")}
	t.Setenv("STANDIN_CRABBOX_ROOT", w.root)
	t.Setenv("STANDIN_CRABBOX_LOG", w.log)
	w.repo = refstest.Repo(t, files)
	if len(executable) > 0 {
		refstest.Git(t, w.repo, append([]string{"update-index", "--chmod=+x"}, executable...)...)
		refstest.Git(t, w.repo, "commit", "-q", "-m", "executable")
	}
	w.tree = refstest.Git(t, w.repo, "rev-parse", "HEAD^{tree}")
	return w
}

// spec is a lease on the base, with its directory where git-lease keeps
// it: inside the checkout's git directory.
func (w *world) spec(id string) sandbox.Spec {
	return sandbox.Spec{
		ID:       id,
		Dir:      filepath.Join(w.repo, ".git", "lease", "sandboxes", id),
		BaseTree: w.tree,
		ExportBase: func(dir string) error {
			r, err := refs.Open(w.repo)
			if err != nil {
				return err
			}
			return r.ExportTree(plumbing.NewHash(w.tree), dir)
		},
	}
}

func (w *world) provider() Provider {
	return Provider{Bin: standinBinary(w.t), CrabboxProvider: "local-container", SandboxedProviders: []string{"local-container"}}
}

// invocation is one line of the stand-in's log.
type invocation struct {
	Argv   []string `json:"argv"`
	Cwd    string   `json:"cwd"`
	Config string   `json:"config"`
	State  string   `json:"state"`
}

func (w *world) invocations() []invocation {
	w.t.Helper()
	f, err := os.Open(w.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	var all []invocation
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var inv invocation
		if err := json.Unmarshal(sc.Bytes(), &inv); err != nil {
			w.t.Fatalf("stand-in log: %v", err)
		}
		all = append(all, inv)
	}
	if err := sc.Err(); err != nil {
		w.t.Fatalf("stand-in log: %v", err) // else checks of what was not called would pass on a cut log
	}
	return all
}

// calls returns the invocations of one command (its first argument).
func (w *world) calls(command string) []invocation {
	var out []invocation
	for _, inv := range w.invocations() {
		if len(inv.Argv) > 0 && inv.Argv[0] == command {
			out = append(out, inv)
		}
	}
	return out
}

// boxes lists the boxes the stand-in's provider holds.
func (w *world) boxes() []string {
	entries, _ := os.ReadDir(filepath.Join(w.root, "boxes"))
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids
}

// argValue returns the value after flag in argv.
func argValue(argv []string, flag string) string {
	if i := slices.Index(argv, flag); i >= 0 && i+1 < len(argv) {
		return argv[i+1]
	}
	return ""
}

// runAgent launches argv in spec's box, releases it and waits.
func runAgent(t *testing.T, p Provider, spec sandbox.Spec, cmd sandbox.Command) (sandbox.Exit, error) {
	t.Helper()
	proc, err := p.Launch(t.Context(), spec, cmd)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if err := proc.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	return proc.Wait()
}
