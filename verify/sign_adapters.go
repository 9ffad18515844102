package verify

import (
	"bytes"
	"crypto"
	"fmt"
	"io"
	"time"

	"github.com/hiddeco/sshsig"
	"github.com/sigstore/sigstore/pkg/signature"
	"golang.org/x/crypto/ssh"
)

// sigstoreSigner adapts a Signer to sigstore's signature.Signer: it signs
// the bytes it is given (DSSE's PAE) as an SSHSIG blob.
type sigstoreSigner struct{ s *Signer }

// PublicKey returns the key in crypto form, or an error for an SSH
// certificate, which has none.
func (a sigstoreSigner) PublicKey(...signature.PublicKeyOption) (crypto.PublicKey, error) {
	if k, ok := a.s.pub.(ssh.CryptoPublicKey); ok {
		return k.CryptoPublicKey(), nil
	}
	return nil, fmt.Errorf("%s key has no crypto.PublicKey form", a.s.pub.Type())
}

// SignMessage signs message with the Signer's key in SignatureNamespace.
func (a sigstoreSigner) SignMessage(message io.Reader, _ ...signature.SignOption) ([]byte, error) {
	return a.s.signSSHSIG(message)
}

// allowedVerifier adapts the allowed signers to sigstore's
// signature.Verifier: it accepts an SSHSIG blob in SignatureNamespace by
// any key they authorize, and records who signed and why signatures failed.
type allowedVerifier struct {
	allowed  *AllowedSigners
	now      time.Time
	signer   Identity
	failures []error
}

// PublicKey returns no key and no error: the allowed signers hold many.
// With no key, sigstore's dsse ignores keyids and tries every signature.
func (v *allowedVerifier) PublicKey(...signature.PublicKeyOption) (crypto.PublicKey, error) {
	return nil, nil
}

// VerifySignature checks one SSHSIG blob over message (DSSE's PAE).
func (v *allowedVerifier) VerifySignature(sig, message io.Reader, _ ...signature.VerifyOption) error {
	id, err := v.verify(sig, message)
	if err != nil {
		v.failures = append(v.failures, err)
		return err
	}
	v.signer = id
	return nil
}

func (v *allowedVerifier) verify(sigR, messageR io.Reader) (Identity, error) {
	blob, err := io.ReadAll(sigR)
	if err != nil {
		return Identity{}, err
	}
	message, err := io.ReadAll(messageR)
	if err != nil {
		return Identity{}, err
	}
	sig, err := sshsig.ParseSignature(blob)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: not an SSH signature: %v", ErrBadSignature, err)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	if err := sshsig.Verify(bytes.NewReader(message), sig, sig.PublicKey, sig.HashAlgorithm, SignatureNamespace); err != nil {
		return Identity{}, fmt.Errorf("%w by key %s (namespace %q): %v", ErrBadSignature, fp, sig.Namespace, err)
	}
	return v.allowed.authorize(sig.PublicKey, SignatureNamespace, v.now)
}
