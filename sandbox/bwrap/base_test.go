package bwrap

import (
	"errors"
	"os"
	"path/filepath"
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

func TestBaseIsExportedOnceAndRemovedWithItsLastUser(t *testing.T) {
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
	if b, err := os.ReadFile(filepath.Join(lowerDir(a), "file")); err != nil || string(b) != "base" {
		t.Fatalf("exported base: %q %v", b, err)
	}
	must(t, releaseBase(a))
	must(t, releaseBase(a)) // twice is harmless
	if _, err := os.Stat(lowerDir(b)); err != nil {
		t.Fatalf("releasing one lease removed a base another lease uses: %v", err)
	}
	must(t, releaseBase(b))
	if _, err := os.Stat(basePath(b)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the base outlived its last user: %v", err)
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
	if _, err := os.Stat(basePath(broken)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed export became a base")
	}
	// A crash mid-export leaves a .tmp- directory: it is cleared, never used.
	must(t, os.MkdirAll(filepath.Join(bases, ".tmp-"+tree+"-crashed", "tree"), 0o755))
	good := specFor(bases, "bbbbbbbbbbbb", &exports)
	must(t, acquireBase(good))
	if left, _ := filepath.Glob(filepath.Join(bases, ".tmp-*")); len(left) != 0 {
		t.Fatalf("stale exports left: %v", left)
	}
	if _, err := os.Stat(filepath.Join(lowerDir(good), "partial")); !errors.Is(err, os.ErrNotExist) {
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
