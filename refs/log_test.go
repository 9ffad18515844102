package refs_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

func openTestRepo(t testing.TB, files map[string]string) (*refs.Repo, string) {
	t.Helper()
	dir := refstest.Repo(t, files)
	repo, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo, dir
}

func TestAppendChainsCommitsAndKeepsEarlierFiles(t *testing.T) {
	repo, dir := openTestRepo(t, map[string]string{"a": "1"})
	ctx := context.Background()
	id := refs.ID("0123456789ab")
	first, err := repo.Append(ctx, id, plumbing.ZeroHash, map[string][]byte{"lease.json": []byte("one"), "result/x": []byte("x")}, "lease 0123456789ab: new -> provisioning\n")
	if err != nil {
		t.Fatal(err)
	}
	second, err := repo.Append(ctx, id, first, map[string][]byte{"lease.json": []byte("two")}, "lease 0123456789ab: provisioning -> running\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := repo.LogTip(id); got != second {
		t.Fatalf("tip = %s, want %s", got, second)
	}
	if b, _ := repo.ReadFile(second, "lease.json", 100); string(b) != "two" {
		t.Fatalf("lease.json = %q", b)
	}
	if b, _ := repo.ReadFile(second, "result/x", 100); string(b) != "x" {
		t.Fatalf("result/x lost: %q", b)
	}
	log := refstest.Git(t, dir, "log", "--format=%s", "refs/leases/0123456789ab")
	if log != "lease 0123456789ab: provisioning -> running\nlease 0123456789ab: new -> provisioning" {
		t.Fatalf("git log says:\n%s", log)
	}
	entries, err := repo.Log(second)
	if err != nil || len(entries) != 2 || entries[0].Commit != first {
		t.Fatalf("Log = %v, %v", entries, err)
	}
}

// LogHeads lists each log's tip and the state its newest entry's trailer
// names, for loose and packed refs alike, and only lease logs.
func TestLogHeads(t *testing.T) {
	repo, dir := openTestRepo(t, map[string]string{"a": "1"})
	ctx := context.Background()
	a, b := refs.ID("0123456789ab"), refs.ID("ba9876543210")
	tipA, err := repo.Append(ctx, a, plumbing.ZeroHash, map[string][]byte{"lease.json": []byte("1")}, "lease 0123456789ab: new -> running\n\nLease-ID: 0123456789ab\nLease-State: running\n")
	if err != nil {
		t.Fatal(err)
	}
	refstest.Git(t, dir, "pack-refs", "--all")
	tipB, err := repo.Append(ctx, b, plumbing.ZeroHash, map[string][]byte{"lease.json": []byte("2")}, "lease ba9876543210: review: note\n\nLease-State: review\nLease-Event: note\n")
	if err != nil {
		t.Fatal(err)
	}
	refstest.Git(t, dir, "update-ref", "refs/leases/not-an-id", tipB.String())
	heads, err := repo.LogHeads()
	if err != nil {
		t.Fatal(err)
	}
	want := []refs.LogHead{{ID: a, Tip: tipA, State: "running"}, {ID: b, Tip: tipB, State: "review"}}
	if len(heads) != len(want) || heads[0] != want[0] || heads[1] != want[1] {
		t.Fatalf("LogHeads = %+v, want %+v", heads, want)
	}
}

func TestAppendFromStaleTipFailsAndChangesNothing(t *testing.T) {
	repo, _ := openTestRepo(t, map[string]string{"a": "1"})
	ctx := context.Background()
	id := refs.ID("0123456789ab")
	first, err := repo.Append(ctx, id, plumbing.ZeroHash, map[string][]byte{"lease.json": []byte("one")}, "m\n")
	if err != nil {
		t.Fatal(err)
	}
	second, err := repo.Append(ctx, id, first, map[string][]byte{"lease.json": []byte("two")}, "m\n")
	if err != nil {
		t.Fatal(err)
	}
	// A writer that still believes first is the tip loses.
	_, err = repo.Append(ctx, id, first, map[string][]byte{"lease.json": []byte("stale")}, "m\n",
		refs.RefUpdate{Name: "refs/heads/lease/0123456789ab", Old: plumbing.ZeroHash, New: first})
	if !errors.Is(err, refs.ErrStale) {
		t.Fatalf("stale append: %v, want ErrStale", err)
	}
	if got, _ := repo.LogTip(id); got != second {
		t.Fatalf("tip moved to %s", got)
	}
	if b, _ := repo.Ref("refs/heads/lease/0123456789ab"); !b.IsZero() {
		t.Fatalf("the branch of the failed transaction was created")
	}
	// Creating a log that exists is stale too.
	if _, err := repo.Append(ctx, id, plumbing.ZeroHash, map[string][]byte{"lease.json": []byte("x")}, "m\n"); !errors.Is(err, refs.ErrStale) {
		t.Fatalf("second create: %v, want ErrStale", err)
	}
}

func TestUpdateRefusesRefsOutsideLeaseNamespaces(t *testing.T) {
	repo, _ := openTestRepo(t, map[string]string{"a": "1"})
	head, _ := repo.ResolveCommit("HEAD")
	for _, name := range []string{"HEAD", "refs/tags/v1", "refs/leases/../../HEAD", "refs/heads/a..b"} {
		err := repo.Update(context.Background(), "test", refs.RefUpdate{Name: name, New: head})
		if err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("Update(%q) = %v, want refusal", name, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := refs.Open(t.TempDir()); !errors.Is(err, refs.ErrNotRepo) {
		t.Errorf("plain directory: %v", err)
	}
	refstest.Setenv(t)
	bare := t.TempDir()
	refstest.Git(t, bare, "init", "-q", "--bare")
	if _, err := refs.Open(bare); !errors.Is(err, refs.ErrBare) {
		t.Errorf("bare: %v", err)
	}
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	refstest.Git(t, dir, "config", "core.repositoryformatversion", "1")
	refstest.Git(t, dir, "config", "extensions.worktreeConfig", "true")
	if _, err := refs.Open(dir); err == nil || !strings.Contains(err.Error(), "cannot read this repository") {
		t.Errorf("worktreeConfig: %v", err)
	}
	sha256 := t.TempDir()
	refstest.Git(t, sha256, "init", "-q", "--object-format=sha256")
	if _, err := refs.Open(sha256); err == nil || !strings.Contains(err.Error(), "works on SHA-1 repositories, and this one uses sha256") {
		t.Errorf("sha256: %v", err)
	}
	sha1 := refstest.Repo(t, map[string]string{"a": "1"})
	refstest.Git(t, sha1, "config", "core.repositoryformatversion", "1")
	refstest.Git(t, sha1, "config", "extensions.objectFormat", "sha1")
	if _, err := refs.Open(sha1); err == nil || !strings.Contains(err.Error(), "remove the extension") {
		t.Errorf("an explicit sha1 object format: %v", err)
	}
}
