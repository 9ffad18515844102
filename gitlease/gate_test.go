package gitlease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// TestExecutableDigestIsKeptUnderTheFilesIdentity: the digest a start
// matches gate records by is the executable's sha256, recomputed whenever
// the cached one was kept for another file or another version of it.
func TestExecutableDigestIsKeptUnderTheFilesIdentity(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	self, err := os.Executable()
	must(t, err)
	b, err := os.ReadFile(self)
	must(t, err)
	sum := sha256.Sum256(b)
	want := "sha256:" + hex.EncodeToString(sum[:])
	if got, err := executableDigest(); err != nil || got != want {
		t.Fatalf("digest %s (%v), want %s", got, err, want)
	}
	cache := filepath.Join(os.Getenv("XDG_STATE_HOME"), "git-lease", "gate", "executable")
	kept, err := os.ReadFile(cache)
	must(t, err)
	id, _, _ := strings.Cut(string(kept), "\n")
	// The cache is what a start reads…
	must(t, os.WriteFile(cache, []byte(id+"\nsha256:cached\n"), 0o600))
	if got, _ := executableDigest(); got != "sha256:cached" {
		t.Fatalf("the cached digest was not used: %s", got)
	}
	// …only for the same file as it was: another inode or ctime hashes again.
	must(t, os.WriteFile(cache, []byte("1 2 3 4.5 6.7\nsha256:cached\n"), 0o600))
	if got, _ := executableDigest(); got != want {
		t.Fatalf("a cache kept for another file was used: %s", got)
	}
}

// TestBwrapVersionIsKeptUnderTheFilesIdentity: a start asks bwrap its
// version once per bwrap file, not once per start.
func TestBwrapVersionIsKeptUnderTheFilesIdentity(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	bin := t.TempDir()
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	runs := filepath.Join(t.TempDir(), "runs")
	bwrap := filepath.Join(bin, "bwrap")
	write := func(version string) {
		must(t, os.WriteFile(bwrap, []byte("#!/bin/sh\necho run >> "+runs+"\necho bubblewrap "+version+"\n"), 0o755))
	}
	ask := func(want string, wantRuns int) {
		t.Helper()
		if got, err := providerVersion(context.Background(), "bwrap"); err != nil || got != want {
			t.Fatalf("version %q (%v), want %q", got, err, want)
		}
		b, _ := os.ReadFile(runs)
		if n := strings.Count(string(b), "run"); n != wantRuns {
			t.Fatalf("bwrap --version ran %d times, want %d", n, wantRuns)
		}
	}
	write("0.8.0")
	ask("0.8.0", 1)
	ask("0.8.0", 1)
	// Another bwrap (here the same file rewritten) is asked again.
	write("0.9.0")
	ask("0.9.0", 2)
}

// TestRecordingTheSameGateWritesNothing: every start records its gate in
// the repository, nearly always the record already there; that costs no
// object write (not even a temporary file), and a new record is a commit.
func TestRecordingTheSameGateWritesNothing(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // a signing key of the test's own
	repo, err := refs.Open(refstest.Repo(t, map[string]string{"a.txt": "a"}))
	must(t, err)
	r := &GateRecord{Version: GateVersion, GateSetup: GateSetup{Provider: "bwrap", Supervisor: "headless", Kernel: "k", GitLease: "dev"}, Passed: true}
	must(t, recordGate(context.Background(), repo, encodeGateRecord(r), r))
	first, _ := repo.Ref(GateRef("bwrap", "headless"))
	objects := filepath.Join(repo.CommonDir, "objects", "pack") // where go-git makes its temporary files
	before, err := os.Stat(objects)
	must(t, err)
	must(t, recordGate(context.Background(), repo, encodeGateRecord(r), r))
	after, err := os.Stat(objects)
	must(t, err)
	if again, _ := repo.Ref(GateRef("bwrap", "headless")); again != first {
		t.Fatalf("the same record was recorded again: %s after %s", again, first)
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("recording the same gate wrote in %s", objects)
	}
	r.Kernel = "k2"
	must(t, recordGate(context.Background(), repo, encodeGateRecord(r), r))
	if next, _ := repo.Ref(GateRef("bwrap", "headless")); next == first {
		t.Fatal("a new record was not recorded")
	}
}
