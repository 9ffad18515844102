package gitlease

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/git-lease/git-lease/gitlease/policy"
	"github.com/git-lease/git-lease/refs"
	"github.com/git-lease/git-lease/verify"
)

var (
	signersMu sync.Mutex
	signers   = map[*refs.Repo]*verify.Signer{}
)

// KeyDir is where git lease keys init puts git-lease's own key.
func KeyDir() string { return filepath.Join(policy.ConfigHome(), "git-lease", "keys") }

// gitConfig reads one git config value ("" when unset).
func gitConfig(repo *refs.Repo, key string) string { return repo.Config(key) }

// signerConfig is where LoadSigner looks: git-lease's own key, else git's
// SSH signing key (gpg.format=ssh, user.signingkey), through ssh-agent when
// only its public half is at hand.
func signerConfig(repo *refs.Repo) verify.SignerConfig {
	return verify.SignerConfig{
		KeyDir: KeyDir(), Format: gitConfig(repo, "gpg.format"), SigningKey: gitConfig(repo, "user.signingkey"),
		AgentSocket: os.Getenv("SSH_AUTH_SOCK"),
	}
}

// LoadSigner loads the signing key without creating one.
func LoadSigner(repo *refs.Repo) (*verify.Signer, error) {
	return verify.LoadSigner(signerConfig(repo))
}

// SignerEmail is the principal of this user's allowed-signers line.
func SignerEmail(repo *refs.Repo) string {
	if e := gitConfig(repo, "user.email"); e != "" {
		return e
	}
	return "git-lease@localhost"
}

// Signing loads the key that signs everything git-lease writes for this
// repository (every commit, and the DSSE receipts) and makes the
// repository sign its commits with it. With no key at all it creates
// git-lease's own (as git lease keys init would) and says so on notice,
// with the allowed-signers line teammates need. It is loaded once per
// process.
func Signing(repo *refs.Repo, notice io.Writer) (*verify.Signer, error) {
	signersMu.Lock()
	defer signersMu.Unlock()
	if s := signers[repo]; s != nil {
		return s, nil
	}
	s, err := verify.LoadSigner(signerConfig(repo))
	if errors.Is(err, verify.ErrNoSigningKey) {
		line, initErr := verify.InitKey(KeyDir(), SignerEmail(repo))
		switch {
		case errors.Is(initErr, verify.ErrKeyExists):
			// Another git-lease made it just now; it may still be writing.
			for i := 0; i < 50; i++ {
				if s, err = verify.LoadSigner(signerConfig(repo)); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		case initErr != nil:
			return nil, fmt.Errorf("no signing key, and creating one failed: %w", initErr)
		default:
			fmt.Fprintf(notice, "git-lease: created a signing key in %s; teammates verify your leases with this allowed-signers line:\n%s\n", KeyDir(), line)
			s, err = verify.LoadSigner(signerConfig(repo))
		}
	}
	if err != nil {
		return nil, err
	}
	signers[repo] = s
	repo.CommitSigner = s.SignCommit
	return s, nil
}

// AllowedSigners reads the allowed signers: file (else git config
// lease.allowedSignersFile, else git's gpg.ssh.allowedSignersFile), plus,
// when withOwn, this user's own signing key (your own leases verify
// without configuration). A missing file is an error only when named.
func AllowedSigners(repo *refs.Repo, file string, withOwn bool) (*verify.AllowedSigners, error) {
	named := file != ""
	if file == "" {
		file = gitConfig(repo, "lease.allowedSignersFile")
	}
	if file == "" {
		file = gitConfig(repo, "gpg.ssh.allowedSignersFile")
	}
	file = policy.ExpandHome(file)
	var text []byte
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil && (named || !errors.Is(err, os.ErrNotExist)) {
			return nil, fmt.Errorf("allowed signers: %w", err)
		}
		text = b
	}
	if withOwn {
		if s, err := verify.LoadSigner(signerConfig(repo)); err == nil {
			text = append(append(text, '\n'), s.AllowedSignersLine(SignerEmail(repo))+"\n"...)
		}
	}
	return verify.ParseAllowedSigners(bytes.NewReader(text))
}
