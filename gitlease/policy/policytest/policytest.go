// Package policytest makes repositories with a trusted policy and a
// .lease.toml, for the tests of the policy and of the leases that load it.
package policytest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// Repo makes a repository whose base commit carries leaseToml (if any) and
// a trusted policy file with trusted (if any), and loads the policy of a
// lease on that base.
func Repo(t *testing.T, trusted, leaseToml string) (*refs.Repo, *policy.Effective, error) {
	t.Helper()
	files := map[string]string{"a": "a"}
	if leaseToml != "" {
		files[".lease.toml"] = leaseToml
	}
	dir := refstest.Repo(t, files)
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if trusted != "" {
		if err := os.MkdirAll(filepath.Join(cfg, "git-lease"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfg, "git-lease", "policy.toml"), []byte(trusted), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := refs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := repo.ResolveCommit("HEAD")
	eff, err := policy.Load(repo, head)
	return repo, eff, err
}

// ForAgent loads the policy of a lease running agent (may be empty) on a
// repository made by Repo.
func ForAgent(t *testing.T, trusted, leaseToml, agent string) (*policy.Effective, error) {
	t.Helper()
	repo, _, _ := Repo(t, trusted, leaseToml)
	head, _ := repo.ResolveCommit("HEAD")
	return policy.LoadForAgent(repo, head, agent)
}
