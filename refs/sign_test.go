package refs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lease/git-lease/refs/refstest"
	"github.com/git-lease/git-lease/verify"
)

// TestSignedCommitsVerifyWithGit checks that a commit signed through
// CommitSigner is one git itself verifies with an allowed signers file.
func TestSignedCommitsVerifyWithGit(t *testing.T) {
	repo, dir := openTestRepo(t, map[string]string{"a": "1"})
	keys := t.TempDir()
	line, err := verify.InitKey(keys, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := verify.LoadSigner(verify.SignerConfig{KeyDir: keys})
	if err != nil {
		t.Fatal(err)
	}
	repo.CommitSigner = signer.SignCommit
	head, _ := repo.ResolveCommit("HEAD")
	c, _ := repo.Commit(head)
	signed, err := repo.WriteCommit(c.TreeHash, nil, "signed\n")
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(allowed, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refstest.Git(t, dir, "config", "gpg.format", "ssh")
	refstest.Git(t, dir, "config", "gpg.ssh.allowedSignersFile", allowed)
	out := refstest.Git(t, dir, "verify-commit", "-v", signed.String())
	if !strings.Contains(out, `Good "git" signature for ada@example.com`) {
		t.Fatalf("git verify-commit says:\n%s", out)
	}
	payload, sig, err := repo.CommitSignature(signed)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := verify.ParseAllowedSigners(strings.NewReader(line))
	if _, err := verify.VerifyCommit(payload, sig, a); err != nil {
		t.Fatalf("VerifyCommit: %v", err)
	}
	if _, err := verify.VerifyCommit(append(payload, 'x'), sig, a); err == nil {
		t.Fatalf("a changed byte verified")
	}
}
