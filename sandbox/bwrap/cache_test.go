package bwrap

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// keepAll is an age no layer of a test reaches.
const keepAll = 1000 * time.Hour

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
	if done, err := EvictCaches(caches, keepAll, 0, time.Now(), false); err != nil || len(done) != 0 {
		t.Fatalf("removed a layer in use: %v %v", done, err)
	}
	must(t, releaseCaches(lease))
	must(t, releaseCaches(lease)) // twice is harmless
	done, err := EvictCaches(caches, keepAll, 0, time.Now(), true)
	if err != nil || len(done) != 1 || !strings.HasPrefix(done[0], "would remove cache go layer "+first.Seq) {
		t.Fatalf("dry run: %v %v", done, err)
	}
	if done, err := EvictCaches(caches, keepAll, 0, time.Now(), false); err != nil || len(done) != 1 || !strings.HasPrefix(done[0], "removed cache go layer "+first.Seq) {
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
	if done, err := EvictCaches(caches, keepAll, 0, time.Now(), false); err != nil || len(done) != 1 {
		t.Fatalf("gc after rm: %v %v", done, err)
	}
	if names, err := CacheNames(caches); err != nil || len(names) != 0 {
		t.Fatalf("left %v %v", names, err)
	}
}

// Layers no lease uses go when unused for longer than the age, then the
// least recently used over the size cap, whether current or superseded;
// a layer a lease has mounted stays whatever its age, and gc says what it
// freed.
func TestEvictCachesByAgeAndSize(t *testing.T) {
	caches := t.TempDir()
	now := time.Now()
	layer := func(name string, days int, users ...string) CacheLayer {
		l, err := AddCacheLayer(caches, name, warmUpper(t, strings.Repeat("x", 100<<10)), []string{"go"}, nil)
		must(t, err)
		for _, id := range users {
			must(t, acquireCaches(sandbox.Spec{ID: id, CachesDir: caches, Caches: []string{name}}))
		}
		when := now.Add(-time.Duration(days) * 24 * time.Hour)
		must(t, os.Chtimes(l.Dir, when, when))
		if len(users) > 0 {
			must(t, os.Chtimes(filepath.Join(l.Dir, "users"), when, when))
		}
		return l
	}
	old := layer("old", 40)
	mounted := layer("mounted", 40, "aaaaaaaaaaaa")
	recent := layer("recent", 2)
	newest := layer("newest", 1)
	left := func() []string {
		var out []string
		for _, l := range []CacheLayer{old, mounted, recent, newest} {
			if _, err := os.Stat(l.Dir); err == nil {
				out = append(out, l.Name)
			}
		}
		return out
	}
	done, err := EvictCaches(caches, 30*24*time.Hour, 0, now, true)
	if err != nil || len(done) != 1 || !strings.HasPrefix(done[0], "would evict cache old layer 000001 (") || len(left()) != 4 {
		t.Fatalf("dry run: %q %v, left %v", done, err, left())
	}
	done, err = EvictCaches(caches, 30*24*time.Hour, 0, now, false)
	if err != nil || len(done) != 1 || !strings.Contains(done[0], "evicted cache old layer 000001 (") || !strings.Contains(done[0], "unused since") {
		t.Fatalf("by age: %q %v", done, err)
	}
	if got := left(); !slices.Equal(got, []string{"mounted", "recent", "newest"}) {
		t.Fatalf("after evicting by age: %v left", got)
	}
	// Each layer takes a little over 100 KiB: a cap of 250 KiB keeps two,
	// the one in use (over its age) and the most recently used.
	done, err = EvictCaches(caches, 30*24*time.Hour, 250<<10, now, false)
	if err != nil || len(done) != 1 || !strings.Contains(done[0], "evicted cache recent layer") || !strings.Contains(done[0], "over the size cap") {
		t.Fatalf("by size: %q %v", done, err)
	}
	if got := left(); !slices.Equal(got, []string{"mounted", "newest"}) {
		t.Fatalf("after evicting by size: %v left", got)
	}
	lease := sandbox.Spec{ID: "bbbbbbbbbbbb", CachesDir: caches, Caches: []string{"newest"}}
	must(t, acquireCaches(lease))
	if held := heldCaches(lease); len(held) != 1 || held[0] != filepath.Join(newest.Dir, "layer") {
		t.Fatalf("a lease after gc got %v", held)
	}
	if names, _ := CacheNames(caches); !slices.Equal(names, []string{"mounted", "newest"}) {
		t.Fatalf("the caches left are %v", names)
	}
}
