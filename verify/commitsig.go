package verify

import (
	"bytes"
	"fmt"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// CommitNamespace is the SSHSIG namespace git uses for commit signatures,
// so that git log --show-signature and git verify-commit check the
// commits git-lease signs with the same allowed signers file.
const CommitNamespace = "git"

// SignCommit signs the bytes of a commit without its signature header and
// returns the armored SSH signature git stores in the gpgsig header.
func (s *Signer) SignCommit(payload []byte) (string, error) {
	sig, err := s.sshsig(bytes.NewReader(payload), CommitNamespace)
	if err != nil {
		return "", err
	}
	return string(sshsig.Armor(sig)), nil
}

// VerifyCommit checks an armored SSH commit signature over payload (the
// commit without its signature header) in CommitNamespace, by a key that
// allowed authorizes now. Errors wrap ErrBadSignature or ErrUnknownSigner.
func VerifyCommit(payload []byte, armored string, allowed *AllowedSigners) (Identity, error) {
	if armored == "" {
		return Identity{}, fmt.Errorf("%w: the commit is not signed", ErrBadSignature)
	}
	sig, err := sshsig.Unarmor([]byte(armored))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: not an SSH signature: %v", ErrBadSignature, err)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	if err := sshsig.Verify(bytes.NewReader(payload), sig, sig.PublicKey, sig.HashAlgorithm, CommitNamespace); err != nil {
		return Identity{}, fmt.Errorf("%w by key %s: %v", ErrBadSignature, fp, err)
	}
	if allowed == nil {
		allowed = &AllowedSigners{}
	}
	return allowed.authorize(sig.PublicKey, CommitNamespace, time.Now())
}
