package verify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// PayloadType is the DSSE payload type of every envelope git-lease signs.
const PayloadType = "application/vnd.in-toto+json"

// SignatureNamespace is the SSHSIG namespace of git-lease signatures. A
// signature can be checked by hand with `ssh-keygen -Y verify -n git-lease`
// over the envelope's DSSE pre-authentication encoding (PAE).
const SignatureNamespace = "git-lease"

var (
	// ErrMalformedEnvelope is returned for bytes that are not a DSSE envelope.
	ErrMalformedEnvelope = errors.New("malformed DSSE envelope")
	// ErrWrongPayloadType is returned for an envelope that does not hold an
	// in-toto statement.
	ErrWrongPayloadType = errors.New("wrong DSSE payload type")
	// ErrBadSignature is returned when no signature verifies: the envelope was
	// changed after signing, or signed for another purpose.
	ErrBadSignature = errors.New("bad signature")
	// ErrUnknownSigner is returned for a valid signature by a key that the
	// allowed signers do not authorize for SignatureNamespace now.
	ErrUnknownSigner = errors.New("signer is not allowed")
)

// envelope is a DSSE envelope as stored.
type envelope struct {
	PayloadType string              `json:"payloadType"`
	Payload     string              `json:"payload"`
	Signatures  []envelopeSignature `json:"signatures"`
}

// envelopeSignature holds an SSHSIG blob; KeyID is the key's SHA256
// fingerprint, a hint outside the signed bytes.
type envelopeSignature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// Sign checks st and returns it signed by s as a DSSE envelope (JSON, one
// line) of PayloadType, whose one signature is an SSHSIG blob in
// SignatureNamespace. An invalid statement is an ErrBadStatement; a key
// used through ssh-agent needs the agent running and holding the key.
func Sign(s *Signer, st Statement) ([]byte, error) {
	if err := st.check(st.PredicateType); err != nil {
		return nil, err
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	sig, err := s.signSSHSIG(bytes.NewReader(pae(PayloadType, payload)))
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(envelope{
		PayloadType: PayloadType,
		Payload:     base64.StdEncoding.EncodeToString(payload),
		Signatures:  []envelopeSignature{{KeyID: s.Fingerprint(), Sig: base64.StdEncoding.EncodeToString(sig)}},
	})
	return append(b, '\n'), err
}

// pae is DSSE's pre-authentication encoding of a payload, the bytes that
// are signed: "DSSEv1 <len(type)> <type> <len(payload)> <payload>".
func pae(payloadType string, payload []byte) []byte {
	return fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload)
}

// VerifyEnvelope checks that b is a DSSE envelope of PayloadType with a
// valid SSHSIG signature in SignatureNamespace by a key that allowed
// authorizes now (a nil allowed authorizes nobody), holding an in-toto
// statement of wantPredicateType. It returns the statement and who signed
// it. Errors wrap ErrMalformedEnvelope, ErrWrongPayloadType,
// ErrBadSignature, ErrUnknownSigner (naming the key's fingerprint),
// ErrBadStatement or ErrWrongPredicateType.
func VerifyEnvelope(b []byte, allowed *AllowedSigners, wantPredicateType string) (*Statement, Identity, error) {
	env, err := decodeEnvelope(b)
	if err != nil {
		return nil, Identity{}, err
	}
	if env.PayloadType != PayloadType {
		return nil, Identity{}, fmt.Errorf("%w: %q, want %q", ErrWrongPayloadType, env.PayloadType, PayloadType)
	}
	if allowed == nil {
		allowed = &AllowedSigners{}
	}
	payload, _ := base64.StdEncoding.DecodeString(env.Payload) // checked by decodeEnvelope
	message := pae(env.PayloadType, payload)
	now := time.Now()
	var signer Identity
	var failures []error
	for _, s := range env.Signatures {
		blob, _ := base64.StdEncoding.DecodeString(s.Sig) // checked by decodeEnvelope
		id, err := verifySSHSIG(allowed, now, blob, message)
		if err == nil {
			signer, failures = id, nil
			break
		}
		failures = append(failures, err)
	}
	if failures != nil {
		return nil, Identity{}, errors.Join(failures...)
	}
	st, err := parseStatement(payload, wantPredicateType)
	if err != nil {
		return nil, Identity{}, err
	}
	return st, signer, nil
}

// decodeEnvelope decodes a DSSE envelope strictly: known fields only, no
// trailing data, standard base64, and at least one non-empty signature.
func decodeEnvelope(b []byte) (*envelope, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var env envelope
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedEnvelope, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data", ErrMalformedEnvelope)
	}
	if _, err := base64.StdEncoding.DecodeString(env.Payload); err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrMalformedEnvelope, err)
	}
	if len(env.Signatures) == 0 {
		return nil, fmt.Errorf("%w: no signature", ErrMalformedEnvelope)
	}
	for i, s := range env.Signatures {
		if sig, err := base64.StdEncoding.DecodeString(s.Sig); err != nil || len(sig) == 0 {
			return nil, fmt.Errorf("%w: signature %d is not base64", ErrMalformedEnvelope, i+1)
		}
	}
	return &env, nil
}
