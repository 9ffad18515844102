package crabbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/git-lease/git-lease/sandbox"
)

// seed makes <spec.Dir>/seed a fresh git repository whose only commit holds
// exactly the base tree, checking its tree hash against spec.BaseTree.
// Crabbox syncs tracked files from there, so the box gets the base and
// nothing of the developer's checkout. A seed that already holds the base
// is kept (idempotent); anything else there is replaced.
func seed(ctx context.Context, spec sandbox.Spec) error {
	dir := layout(spec).seed
	if tree, err := seedGit(ctx, dir, "rev-parse", "--verify", "HEAD^{tree}"); err == nil && tree == spec.BaseTree {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if err := spec.ExportBase(dir); err != nil {
		return fmt.Errorf("export the base into the crabbox seed: %w", err)
	}
	steps := [][]string{
		{"init", "-q", "-b", "lease"},
		{"add", "-A"},
		{"commit", "-q", "--allow-empty", "--no-verify", "-m", "git-lease base " + spec.BaseTree},
	}
	for _, args := range steps {
		if _, err := seedGit(ctx, dir, args...); err != nil {
			return err
		}
	}
	tree, err := seedGit(ctx, dir, "rev-parse", "--verify", "HEAD^{tree}")
	if err != nil {
		return err
	}
	if tree != spec.BaseTree {
		return fmt.Errorf("the crabbox seed holds tree %s, not the base tree %s: the base has entries git cannot add back from files (submodules are not supported through Crabbox)", tree, spec.BaseTree)
	}
	return nil
}

// seedGit runs git on the seed repository only (never discovering another
// one around it), with no user or system config, no hooks, and a fixed
// identity and date, and returns its trimmed output.
func seedGit(ctx context.Context, dir string, args ...string) (string, error) {
	verb := args[0]
	args = append([]string{
		"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "commit.gpgsign=false",
		"-c", "user.name=git-lease", "-c", "user.email=git-lease@localhost",
	}, args...)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(Provider{}.env(os.Environ()),
		"GIT_DIR="+dir+"/.git", "GIT_WORK_TREE="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z", "LC_ALL=C",
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s in the crabbox seed: %v: %s", verb, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// outbox makes what Release uploads to the box, <spec.Dir>/outbox/<name of
// boxDir>/: base.tar, the seed's commit as `git archive` packs it (exactly
// the base tree, with its modes and symlinks), and, when prompt is not
// empty, a copy of that host file as prompt. It returns that directory.
func outbox(ctx context.Context, spec sandbox.Spec, prompt string) (string, error) {
	dir := filepath.Join(layout(spec).outbox, path.Base(boxDir(spec)))
	if err := os.RemoveAll(layout(spec).outbox); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if _, err := seedGit(ctx, layout(spec).seed, "-c", "tar.umask=022", "archive", "--format=tar", "-o", filepath.Join(dir, "base.tar"), "HEAD"); err != nil {
		return "", err
	}
	if prompt != "" {
		data, err := os.ReadFile(prompt)
		if err != nil {
			return "", fmt.Errorf("read the prompt: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "prompt"), data, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}
