package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// git lease gc evicts the exported bases no lease uses, by trusted policy's
// cap, and says what it freed; a base a lease in review still uses stays.
func TestGCEvictsUnusedBases(t *testing.T) {
	dir := faultRepo(t)
	writeTrustedPolicy(t, "[bases]\nmax_bytes = 1\n")
	first := startLease(t, dir, "echo x > x.txt")
	if out := mustRun(t, dir, "gc", "--dry-run"); !strings.Contains(out, "nothing to prune") {
		t.Fatalf("gc touched a base in use:\n%s", out)
	}
	mustRun(t, dir, "cleanup", first)
	out := mustRun(t, dir, "gc", "--dry-run")
	if !strings.Contains(out, "would evict base ") || !strings.Contains(out, "over the size cap") {
		t.Fatalf("gc --dry-run:\n%s", out)
	}
	bases, _ := filepath.Glob(filepath.Join(dir, ".git", "lease", "bases", "*", "tree"))
	if len(bases) != 1 {
		t.Fatalf("the dry run removed the base: %v", bases)
	}
	if out := mustRun(t, dir, "gc"); !strings.Contains(out, "evicted base ") {
		t.Fatalf("gc:\n%s", out)
	}
	if bases, _ := filepath.Glob(filepath.Join(dir, ".git", "lease", "bases", "*", "tree")); len(bases) != 0 {
		t.Fatalf("gc left %v", bases)
	}
}
