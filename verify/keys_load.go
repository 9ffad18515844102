package verify

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// SignerConfig says where LoadSigner finds a key. The verify package never
// runs git: the caller reads git's configuration and the environment.
type SignerConfig struct {
	KeyDir      string // directory that may hold KeyFile from InitKey
	Format      string // git config gpg.format
	SigningKey  string // git config user.signingkey
	AgentSocket string // $SSH_AUTH_SOCK
}

// LoadSigner picks the signing key: git-lease's own key in KeyDir if it
// exists, otherwise the user's SSH signing key as git uses it (Format "ssh"
// and SigningKey set). SigningKey is a path (a leading ~/ is the home
// directory) to a private key, or to a public key whose private key is in
// ssh-agent; or a literal public key "key::ssh-ed25519 AAAA…" or
// "ssh-ed25519 AAAA…", also used through ssh-agent. A key used through the
// agent must be loaded there now (ssh-add). With no key at all it returns
// ErrNoSigningKey.
func LoadSigner(c SignerConfig) (*Signer, error) {
	if c.KeyDir != "" {
		path := filepath.Join(c.KeyDir, KeyFile)
		_, err := os.Lstat(path)
		if err == nil {
			return loadKeyFile(path, c.AgentSocket)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if c.SigningKey == "" {
		return nil, ErrNoSigningKey
	}
	if c.Format != "ssh" {
		return nil, fmt.Errorf("%w (git's gpg.format is %q, and git-lease signs only with SSH keys)", ErrNoSigningKey, c.Format)
	}
	if literal, ok := literalKey(c.SigningKey); ok {
		pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(literal))
		if err != nil {
			return nil, fmt.Errorf("user.signingkey %q is not a public key: %v", c.SigningKey, err)
		}
		return agentSigner(pub, c.AgentSocket, "from user.signingkey")
	}
	path := c.SigningKey
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("user.signingkey %s: %v", path, err)
		}
		path = filepath.Join(home, rest)
	}
	return loadKeyFile(path, c.AgentSocket)
}

// literalKey returns the key text of a user.signingkey that git treats as a
// literal public key rather than a path.
func literalKey(v string) (string, bool) {
	if k, ok := strings.CutPrefix(v, "key::"); ok {
		return k, true
	}
	return v, strings.HasPrefix(v, "ssh-")
}

// loadKeyFile reads a private key (which must not be readable by others),
// or a public key or passphrase-protected private key to use through the
// agent.
func loadKeyFile(path, socket string) (*Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	key, err := ssh.ParsePrivateKey(b)
	var protected *ssh.PassphraseMissingError
	switch {
	case err == nil:
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("private key %s is readable by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
		}
		return &Signer{pub: key.PublicKey(), key: key, source: "from local key file " + path}, nil
	case errors.As(err, &protected) && protected.PublicKey != nil:
		return agentSigner(protected.PublicKey, socket, "from passphrase-protected key file "+path)
	case errors.As(err, &protected):
		return nil, fmt.Errorf("%s is protected by a passphrase: ssh-add it and point user.signingkey at its .pub file", path)
	}
	pub, _, _, _, perr := ssh.ParseAuthorizedKey(b)
	if perr != nil {
		return nil, fmt.Errorf("%s is neither an SSH private key (%v) nor a public key (%v)", path, err, perr)
	}
	return agentSigner(pub, socket, "from public key file "+path)
}

// agentSigner returns a Signer that signs through the agent at socket,
// after checking that the agent holds pub.
func agentSigner(pub ssh.PublicKey, socket, source string) (*Signer, error) {
	if socket == "" {
		return nil, fmt.Errorf("signing key %s %s needs ssh-agent, but SSH_AUTH_SOCK is not set: start ssh-agent and ssh-add the key", ssh.FingerprintSHA256(pub), source)
	}
	if err := withAgentKey(socket, pub, func(ssh.Signer) error { return nil }); err != nil {
		return nil, err
	}
	return &Signer{pub: pub, socket: socket, source: source + " through ssh-agent at " + socket}, nil
}

// withAgentKey connects to the agent at socket and calls f with its signer
// for pub; the connection lasts only for the call.
func withAgentKey(socket string, pub ssh.PublicKey, f func(ssh.Signer) error) error {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		return fmt.Errorf("ssh-agent at %s: %w (is it running? check SSH_AUTH_SOCK)", socket, err)
	}
	defer conn.Close()
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		return fmt.Errorf("ssh-agent at %s: %w", socket, err)
	}
	for _, s := range signers {
		if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
			return f(s)
		}
	}
	return fmt.Errorf("ssh-agent at %s does not hold key %s: ssh-add it", socket, ssh.FingerprintSHA256(pub))
}
