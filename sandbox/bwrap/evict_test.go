package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-lease/git-lease/sandbox"
)

// Bases no lease uses go when unused for longer than the age, or oldest
// first over the size cap, each with the layers stacked on it; a base
// under a layer in use stays whatever its age.
func TestEvictBasesByAgeAndSize(t *testing.T) {
	bases := t.TempDir()
	var exports atomic.Int32
	now := time.Now()
	hash := func(n int) string { return fmt.Sprintf("%040x", n) }
	spec := func(n, parent int) sandbox.Spec {
		s := specFor(bases, hash(n)[28:], &exports)
		s.BaseTree = hash(n)
		s.ExportBase = func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "file"), make([]byte, 1<<20), 0o644)
		}
		if parent >= 0 {
			s.ExportLayer = func(from, dir string, marks sandbox.LayerMarks) error { return nil }
			s.Distance = func(from string) (int, error) {
				if from == hash(parent) {
					return 0, nil
				}
				return 1000, nil
			}
		}
		return s
	}
	// 1 (whole) <- 2 (layer), 3 (whole) <- 4 (layer, in use), 5 (whole).
	for _, b := range [][2]int{{1, -1}, {2, 1}, {3, -1}, {4, 3}, {5, -1}} {
		s := spec(b[0], b[1])
		if b[1] < 0 {
			// A whole export, not a layer on the nearest.
			s.ExportLayer = nil
		}
		must(t, acquireBase(s))
		if b[0] != 4 {
			must(t, releaseBase(s))
		}
	}
	age := func(n int, days int) {
		when := now.Add(-time.Duration(days) * 24 * time.Hour)
		must(t, os.Chtimes(filepath.Join(bases, hash(n), "users"), when, when))
	}
	age(1, 10)
	age(2, 1)
	age(3, 20)
	age(4, 20)
	age(5, 2)
	done, err := EvictBases(bases, 7*24*time.Hour, 0, now, false)
	if err != nil {
		t.Fatal(err)
	}
	left := func() []string {
		var out []string
		entries, _ := os.ReadDir(bases)
		for _, e := range entries {
			if validTree(e.Name()) {
				out = append(out, strings.TrimLeft(e.Name(), "0"))
			}
		}
		return out
	}
	if got := left(); !slices.Equal(got, []string{"3", "4", "5"}) {
		t.Fatalf("after evicting by age: %v left (%v)", got, done)
	}
	if len(done) != 2 || !strings.Contains(done[0], "evicted base "+hash(1)[:12]) {
		t.Fatalf("report: %q", done)
	}
	// 3 and 4 hold about 1 MiB (4 in use), 5 too: a cap of 1.5 MiB
	// evicts 5, the only unused base not under one in use.
	if done, err = EvictBases(bases, 30*24*time.Hour, 3<<19, now, false); err != nil {
		t.Fatal(err)
	}
	if got := left(); !slices.Equal(got, []string{"3", "4"}) {
		t.Fatalf("after evicting by size: %v left (%v)", got, done)
	}
}
