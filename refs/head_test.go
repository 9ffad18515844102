package refs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/refs/refstest"
)

// TestHeadReadInProcessAgreesWithGit checks that HEAD, which git-lease
// reads without a git process, resolves as git resolves it: on a branch,
// on a packed branch, detached, in a linked worktree (whose HEAD is its
// own), and on an unborn branch (an error, as git gives).
func TestHeadReadInProcessAgreesWithGit(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	refstest.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "second")
	linked := filepath.Join(t.TempDir(), "linked")
	refstest.Git(t, dir, "worktree", "add", "-q", "-b", "side", linked, "HEAD~1")
	for _, step := range []struct {
		what, dir string
		git       []string // what to do first
	}{
		{"on a branch", dir, nil},
		{"in a linked worktree", linked, nil},
		{"on a packed branch", dir, []string{"pack-refs", "--all"}},
		{"detached", dir, []string{"checkout", "-q", "--detach", "HEAD~1"}},
		{"on an unborn branch", linked, []string{"checkout", "-q", "--orphan", "unborn"}},
	} {
		if step.git != nil {
			refstest.Git(t, step.dir, step.git...)
		}
		repo, err := refs.Open(step.dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := repo.ResolveCommit("HEAD")
		want, gitErr := gitOutput(step.dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
		if (err != nil) != (gitErr != nil) || err == nil && got.String() != want {
			t.Errorf("%s: ResolveCommit(HEAD) = %v, %v; git says %q, %v", step.what, got, err, want, gitErr)
		}
		wantBranch, _ := gitOutput(step.dir, "rev-parse", "--symbolic-full-name", "HEAD")
		if !strings.HasPrefix(wantBranch, "refs/heads/") {
			wantBranch = ""
		}
		if b := repo.BranchOf("HEAD"); b != wantBranch && gitErr == nil {
			t.Errorf("%s: BranchOf(HEAD) = %q; git says %q", step.what, b, wantBranch)
		}
	}
}

// TestIdentityReadInProcessAgreesWithGit checks the committer identity
// that git-lease reads from the environment and configuration against
// git var's, where it reads it itself (plain values) and where it leaves
// it to git (values git trims).
func TestIdentityReadInProcessAgreesWithGit(t *testing.T) {
	dir := refstest.Repo(t, map[string]string{"a": "1"})
	os.Unsetenv("GIT_COMMITTER_DATE") // restored by refstest's t.Setenv
	for _, step := range []struct {
		what string
		env  map[string]string // "" unsets
		cfg  map[string]string
	}{
		{"from user.*", map[string]string{"GIT_COMMITTER_NAME": "", "GIT_COMMITTER_EMAIL": ""}, map[string]string{"user.name": "Ada User", "user.email": "user@example.com"}},
		{"committer.* over user.*", nil, map[string]string{"committer.name": "Cy Committer", "committer.email": "cy@example.com"}},
		{"the environment over both", map[string]string{"GIT_COMMITTER_NAME": "Eve Env", "GIT_COMMITTER_EMAIL": "eve@example.com"}, nil},
		{"trimmed by git", map[string]string{"GIT_COMMITTER_NAME": " 'Tr. Im' ; ", "GIT_COMMITTER_EMAIL": "<tr@example.com>"}, nil},
		{"brackets inside", map[string]string{"GIT_COMMITTER_NAME": "A<b>c"}, nil},
	} {
		for k, v := range step.env {
			if v == "" {
				os.Unsetenv(k)
			} else {
				t.Setenv(k, v)
			}
		}
		for k, v := range step.cfg {
			refstest.Git(t, dir, "config", k, v)
		}
		repo, err := refs.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := repo.Identity()
		if err != nil {
			t.Fatal(err)
		}
		want, err := gitOutput(dir, "var", "GIT_COMMITTER_IDENT")
		if err != nil {
			t.Fatal(err)
		}
		if got := sig.Name + " <" + sig.Email + ">"; !strings.HasPrefix(want, got+" ") {
			t.Errorf("%s: identity %q; git var says %q", step.what, got, want)
		}
	}
}

// gitOutput runs git in dir with the test's environment as it is now.
func gitOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
