package bwrap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/sandbox"
)

// warmUpper is what a warm-up's cache overlay holds: the cache's directory
// (with a read-only one inside, as Go's module cache makes) and a stray
// file of another directory.
func warmUpper(t *testing.T, content string) string {
	t.Helper()
	upper := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(upper, "go", "mod"), 0o755))
	must(t, os.WriteFile(filepath.Join(upper, "go", "mod", "file"), []byte(content), 0o444))
	must(t, os.Symlink("mod/file", filepath.Join(upper, "go", "link")))
	must(t, os.Chmod(filepath.Join(upper, "go", "mod"), 0o555))
	must(t, os.WriteFile(filepath.Join(upper, "stray"), nil, 0o644))
	return upper
}

// A new layer supersedes the current one for new leases; a superseded
// layer stays while a lease uses it and goes with its last user; cache rm
// does the same for every layer.
func TestCacheLayersOutliveTheirUsers(t *testing.T) {
	caches := t.TempDir()
	first, err := AddCacheLayer(caches, "go", warmUpper(t, "one"), []string{"go"}, []byte(`{"base":"x"}`))
	must(t, err)
	if _, err := os.Lstat(filepath.Join(first.Dir, "layer", "stray")); err == nil {
		t.Fatal("the layer holds a file outside the cache's directories")
	}
	if fi, err := os.Stat(filepath.Join(first.Dir, "layer", "go", "mod")); err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("the read-only directory: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(first.Dir, "layer", "go", "link")); err != nil || target != "mod/file" {
		t.Fatalf("the symlink: %q %v", target, err)
	}
	lease := sandbox.Spec{ID: "aaaaaaaaaaaa", CachesDir: caches, Caches: []string{"go"}}
	must(t, acquireCaches(lease))
	if held := heldCaches(lease); len(held) != 1 || held[0] != filepath.Join(first.Dir, "layer") {
		t.Fatalf("held %v", held)
	}
	second, err := AddCacheLayer(caches, "go", warmUpper(t, "two"), []string{"go"}, nil)
	must(t, err)
	if second.Seq <= first.Seq {
		t.Fatalf("layer %s after %s", second.Seq, first.Seq)
	}
	if held := heldCaches(lease); len(held) != 1 || held[0] != filepath.Join(first.Dir, "layer") {
		t.Fatalf("a running lease's layer changed under it: %v", held)
	}
	later := sandbox.Spec{ID: "bbbbbbbbbbbb", CachesDir: caches, Caches: []string{"go"}}
	must(t, acquireCaches(later))
	if held := heldCaches(later); len(held) != 1 || held[0] != filepath.Join(second.Dir, "layer") {
		t.Fatalf("a new lease got %v, not the newest layer", held)
	}
	if done, err := RemoveUnusedCaches(caches, false); err != nil || len(done) != 0 {
		t.Fatalf("removed a layer in use: %v %v", done, err)
	}
	must(t, releaseCaches(lease))
	must(t, releaseCaches(lease)) // twice is harmless
	done, err := RemoveUnusedCaches(caches, true)
	if err != nil || len(done) != 1 || !strings.HasPrefix(done[0], "would remove cache go layer "+first.Seq) {
		t.Fatalf("dry run: %v %v", done, err)
	}
	if done, err := RemoveUnusedCaches(caches, false); err != nil || len(done) != 1 || !strings.HasPrefix(done[0], "removed cache go layer "+first.Seq) {
		t.Fatalf("gc: %v %v", done, err)
	}
	if _, err := os.Stat(first.Dir); err == nil {
		t.Fatal("the superseded layer is still there")
	}

	done, err = RemoveCache(caches, "go", false)
	if err != nil || len(done) != 1 || !strings.HasPrefix(done[0], "keep cache go layer "+second.Seq) {
		t.Fatalf("rm of a cache in use: %v %v", done, err)
	}
	again := sandbox.Spec{ID: "cccccccccccc", CachesDir: caches, Caches: []string{"go"}}
	must(t, acquireCaches(again))
	if held := heldCaches(again); len(held) != 0 {
		t.Fatalf("a lease after cache rm got %v", held)
	}
	must(t, releaseCaches(later))
	if done, err := RemoveUnusedCaches(caches, false); err != nil || len(done) != 1 {
		t.Fatalf("gc after rm: %v %v", done, err)
	}
	if names, err := CacheNames(caches); err != nil || len(names) != 0 {
		t.Fatalf("left %v %v", names, err)
	}
}
