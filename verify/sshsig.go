package verify

import (
	"bytes"
	"fmt"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// verifySSHSIG checks one SSHSIG blob over message (DSSE's PAE) in
// SignatureNamespace, and that allowed authorizes its key at now.
func verifySSHSIG(allowed *AllowedSigners, now time.Time, blob, message []byte) (Identity, error) {
	sig, err := sshsig.ParseSignature(blob)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: not an SSH signature: %v", ErrBadSignature, err)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	if err := sshsig.Verify(bytes.NewReader(message), sig, sig.PublicKey, sig.HashAlgorithm, SignatureNamespace); err != nil {
		return Identity{}, fmt.Errorf("%w by key %s (namespace %q): %v", ErrBadSignature, fp, sig.Namespace, err)
	}
	return allowed.authorize(sig.PublicKey, SignatureNamespace, now)
}
