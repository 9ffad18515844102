package hooks_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/git-lease/git-lease/hooks"
	"github.com/git-lease/git-lease/refs/refstest"
)

func TestLocateFindsWhereGitRunsHooks(t *testing.T) {
	ctx := context.Background()
	dir := refstest.Repo(t, map[string]string{"sub/a": "1"})
	loc, err := hooks.Locate(ctx, filepath.Join(dir, "sub"))
	if err != nil || *loc != (hooks.Location{GitDir: filepath.Join(dir, ".git"), HooksDir: filepath.Join(dir, ".git", "hooks")}) {
		t.Fatalf("Locate = %+v, %v", loc, err)
	}
	refstest.Git(t, dir, "config", "core.hooksPath", "shared-hooks")
	if loc, err = hooks.Locate(ctx, filepath.Join(dir, "sub")); err != nil || loc.HooksDir != filepath.Join(dir, "shared-hooks") {
		t.Fatalf("with a relative core.hooksPath: %+v, %v", loc, err)
	}
	server := filepath.Join(t.TempDir(), "server.git")
	refstest.Git(t, "", "init", "-q", "--bare", server)
	if loc, err = hooks.Locate(ctx, server); err != nil || !loc.Bare || loc.HooksDir != filepath.Join(server, "hooks") {
		t.Fatalf("a bare repository: %+v, %v", loc, err)
	}
	if _, err := hooks.Locate(ctx, t.TempDir()); !errors.Is(err, hooks.ErrNotRepo) {
		t.Fatalf("outside a repository: %v", err)
	}
}
