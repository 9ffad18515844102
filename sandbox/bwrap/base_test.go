package bwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/git-lease/git-lease/sandbox"
)

const tree = "0123456789abcdef0123456789abcdef01234567"

func specFor(bases, id string, exports *atomic.Int32) sandbox.Spec {
	return sandbox.Spec{ID: id, BaseTree: tree, BasesDir: bases, ExportBase: func(dir string) error {
		exports.Add(1)
		return os.WriteFile(filepath.Join(dir, "file"), []byte("base"), 0o644)
	}}
}

func TestBaseIsExportedOnceAndOutlivesItsUsers(t *testing.T) {
	bases := t.TempDir()
	var exports atomic.Int32
	a, b := specFor(bases, "aaaaaaaaaaaa", &exports), specFor(bases, "bbbbbbbbbbbb", &exports)
	var wg sync.WaitGroup
	for _, s := range []sandbox.Spec{a, b, a} {
		wg.Add(1)
		go func(s sandbox.Spec) {
			defer wg.Done()
			if err := acquireBase(s); err != nil {
				t.Error(err)
			}
		}(s)
	}
	wg.Wait()
	if n := exports.Load(); n != 1 {
		t.Fatalf("the base was exported %d times", n)
	}
	lowers, err := lowerDirs(a)
	if err != nil || len(lowers) != 1 {
		t.Fatalf("lower layers %v, %v", lowers, err)
	}
	if b, err := os.ReadFile(filepath.Join(lowers[0], "file")); err != nil || string(b) != "base" {
		t.Fatalf("exported base: %q %v", b, err)
	}
	must(t, releaseBase(a))
	must(t, releaseBase(a)) // twice is harmless
	must(t, releaseBase(b))
	if users, err := os.ReadDir(filepath.Join(basePath(bases, tree), "users")); err != nil || len(users) != 0 {
		t.Fatalf("users left: %v %v", users, err)
	}
	must(t, acquireBase(a))
	if n := exports.Load(); n != 1 {
		t.Fatalf("the base was exported again for a later lease")
	}
}

// A new tree is laid over the exported base nearest to it, by distance,
// and a stack as deep as maxStack is not stacked on again.
func TestNewTreeIsLaidOverTheNearestBase(t *testing.T) {
	bases := t.TempDir()
	var exports atomic.Int32
	hash := func(n int) string { return fmt.Sprintf("%040x", n) }
	// Tree n is n paths away from tree 0, and |n-m| from tree m.
	specOf := func(n int) sandbox.Spec {
		s := specFor(bases, "aaaaaaaaaaaa", &exports)
		s.BaseTree = hash(n)
		s.ExportLayer = func(from, dir string, marks sandbox.LayerMarks) error {
			return os.WriteFile(filepath.Join(dir, "file"), []byte(s.BaseTree), 0o644)
		}
		s.Distance = func(from string) (int, error) {
			var m int
			fmt.Sscanf(from, "%x", &m)
			return max(n-m, m-n), nil
		}
		return s
	}
	must(t, acquireBase(specOf(0)))
	must(t, acquireBase(specOf(100)))
	must(t, acquireBase(specOf(90)))
	lowers, err := lowerDirs(specOf(90))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(bases, hash(90), "layer"), filepath.Join(bases, hash(100), "layer"), filepath.Join(bases, hash(0), "tree")}
	if !slices.Equal(lowers, want) {
		t.Fatalf("tree 90 stacks on %v, want %v", lowers, want)
	}
	for n := 1; n < maxStack+1; n++ {
		must(t, acquireBase(specOf(1000+n)))
	}
	if exports.Load() != 2 {
		t.Fatalf("%d whole exports, want 2: one for the first tree, one where the stack was %d deep", exports.Load(), maxStack)
	}
	// Tree 1000+n is n+2 deep (over 100 and 0) until the stack is full.
	for n, depth := range map[int]int{maxStack - 2: maxStack, maxStack - 1: 1, maxStack: 2} {
		if lowers, err = lowerDirs(specOf(1000 + n)); err != nil || len(lowers) != depth {
			t.Fatalf("tree %d: %d layers (%v), want %d", 1000+n, len(lowers), err, depth)
		}
	}
}

func TestHalfWrittenExportIsNeverUsed(t *testing.T) {
	bases := t.TempDir()
	var exports atomic.Int32
	broken := specFor(bases, "aaaaaaaaaaaa", &exports)
	broken.ExportBase = func(dir string) error {
		os.WriteFile(filepath.Join(dir, "partial"), []byte("x"), 0o644)
		return errors.New("disk full")
	}
	if err := acquireBase(broken); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("a failed export: %v", err)
	}
	if _, err := os.Stat(basePath(bases, tree)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed export became a base")
	}
	// A crash mid-export leaves a .tmp- directory: it is cleared, never used.
	must(t, os.MkdirAll(filepath.Join(bases, ".tmp-"+tree+"-crashed", "tree"), 0o755))
	good := specFor(bases, "bbbbbbbbbbbb", &exports)
	must(t, acquireBase(good))
	if left, _ := filepath.Glob(filepath.Join(bases, ".tmp-*")); len(left) != 0 {
		t.Fatalf("stale exports left: %v", left)
	}
	if _, err := os.Stat(filepath.Join(bases, tree, "tree", "partial")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the half-written export leaked into the base")
	}
}

func TestDiagnoseSaysWhatToFix(t *testing.T) {
	cases := map[string]string{
		"git-lease sandbox: mount overlay: invalid argument":                                                                     "user extended attributes",
		"git-lease sandbox: mount overlay: no such device":                                                                       "modprobe overlay",
		"bwrap: setting up uid map: Permission denied":                                                                           "user namespaces must be enabled",
		"bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces": "user namespaces must be enabled",
		"": "exited without a word",
	}
	for out, want := range cases {
		if got := diagnose(out); !strings.Contains(got, want) {
			t.Errorf("diagnose(%q) = %q, want it to mention %q", out, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
