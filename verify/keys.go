package verify

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// KeyFile is the name of git-lease's own private key in a key directory;
// its public key is KeyFile + ".pub".
const KeyFile = "git-lease_ed25519"

var (
	// ErrKeyExists is returned by InitKey when the key directory already
	// holds a key.
	ErrKeyExists = errors.New("signing key already exists")
	// ErrNoSigningKey is returned by LoadSigner when no key is configured.
	ErrNoSigningKey = errors.New("no signing key: run `git lease keys init`, or sign with your SSH key (git config gpg.format ssh; git config user.signingkey ~/.ssh/id_ed25519.pub)")
)

// Signer signs with one SSH key: a private key read from a file, or a key
// held by ssh-agent. Make one with LoadSigner.
type Signer struct {
	pub    ssh.PublicKey
	key    ssh.Signer // nil when the key is used through ssh-agent
	socket string     // ssh-agent socket when key is nil
	source string     // where the key came from, for String
}

// InitKey creates a new ed25519 key pair in dir (KeyFile, mode 0600,
// unencrypted, and KeyFile.pub), creating dir with mode 0700 if it is
// missing. It refuses with ErrKeyExists when either file exists, and is
// therefore not idempotent. It returns the key's allowed-signers line for
// email.
func InitKey(dir, email string) (line string, err error) {
	if err := checkPrincipal(email); err != nil {
		return "", err
	}
	priv := filepath.Join(dir, KeyFile)
	for _, p := range []string{priv, priv + ".pub"} {
		if _, err := os.Lstat(p); err == nil {
			return "", fmt.Errorf("%w at %s: keep using it (`git lease keys show` prints its allowed-signers line), or move both files away to make a new one", ErrKeyExists, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	block, err := ssh.MarshalPrivateKey(key, email)
	if err != nil {
		return "", err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := writeNew(priv, pem.EncodeToMemory(block), 0o600); err != nil {
		return "", err
	}
	authorized := strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(sshPub)), "\n")
	if err := writeNew(priv+".pub", []byte(authorized+" "+email+"\n"), 0o644); err != nil {
		os.Remove(priv)
		return "", err
	}
	return allowedSignersLine(email, sshPub), nil
}

// writeNew writes a file that must not exist yet, whole or not at all: it
// is written under a temporary name and linked into place, so that another
// git-lease starting at the same moment never reads it half written.
func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".new-key-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	err = os.Link(f.Name(), path)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w at %s: move it away to make a new key", ErrKeyExists, path)
	}
	return err
}

// checkPrincipal refuses a principal that would not read back as one
// literal principal of an allowed-signers line.
func checkPrincipal(p string) error {
	if p == "" || strings.ContainsAny(p, " \t\r\n,\"*?!#") {
		return fmt.Errorf("principal %q: want one address such as you@example.com, without spaces, commas, quotes or wildcards", p)
	}
	return nil
}

func allowedSignersLine(principal string, pub ssh.PublicKey) string {
	return principal + " " + strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(pub)), "\n")
}

// AllowedSignersLine returns the line that lets principal's signatures by
// this key verify, e.g. `you@example.com ssh-ed25519 AAAA…`.
func (s *Signer) AllowedSignersLine(principal string) string {
	return allowedSignersLine(principal, s.pub)
}

// PublicKey returns the signing key's public key.
func (s *Signer) PublicKey() ssh.PublicKey { return s.pub }

// Fingerprint returns the key's SHA256 fingerprint as ssh-keygen -l shows it.
func (s *Signer) Fingerprint() string { return ssh.FingerprintSHA256(s.pub) }

// String describes the key for people: type, fingerprint and where it is
// used from (a local key file, or ssh-agent).
func (s *Signer) String() string {
	return s.pub.Type() + " " + s.Fingerprint() + " " + s.source
}

// signSSHSIG signs message as an SSHSIG blob in SignatureNamespace.
func (s *Signer) signSSHSIG(message io.Reader) ([]byte, error) {
	sig, err := s.sshsig(message, SignatureNamespace)
	if err != nil {
		return nil, err
	}
	return sig.Marshal(), nil
}

// sshsig signs message in namespace with the local key or through the agent.
func (s *Signer) sshsig(message io.Reader, namespace string) (*sshsig.Signature, error) {
	sign := func(k ssh.Signer) (*sshsig.Signature, error) {
		sig, err := sshsig.Sign(message, k, sshsig.HashSHA512, namespace)
		if err != nil {
			return nil, fmt.Errorf("signing with %s: %w", ssh.FingerprintSHA256(k.PublicKey()), err)
		}
		return sig, nil
	}
	if s.key != nil {
		return sign(s.key)
	}
	var sig *sshsig.Signature
	err := withAgentKey(s.socket, s.pub, func(k ssh.Signer) (err error) {
		sig, err = sign(k)
		return err
	})
	return sig, err
}
