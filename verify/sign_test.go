package verify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiddeco/sshsig"
)

const alice = "alice@example.com"

// sshKeygen runs ssh-keygen, skipping the test where it is not installed.
func sshKeygen(t testing.TB, stdin []byte, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	cmd := exec.Command("ssh-keygen", args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// newKeyFile makes an unencrypted key of type typ with ssh-keygen.
func newKeyFile(t testing.TB, typ string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "id_"+typ)
	if out, err := sshKeygen(t, nil, "-q", "-t", typ, "-N", "", "-C", alice, "-f", path); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	return path
}

// localSigner makes a key with InitKey and loads it.
func localSigner(t testing.TB) *Signer {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	if _, err := InitKey(dir, alice); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSigner(SignerConfig{KeyDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func allowedFor(t testing.TB, lines ...string) *AllowedSigners {
	t.Helper()
	a, err := ParseAllowedSigners(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func testStatement(t testing.TB, predicateType string) Statement {
	t.Helper()
	st, err := NewStatement(predicateType, map[string]string{"lease": "3f9c0a1b2d4e"},
		Subject{Name: "base", Digest: map[string]string{"gitCommit": strings.Repeat("a", 40)}},
		Subject{Name: "patch", Digest: map[string]string{"sha256": strings.Repeat("b", 64)}})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func signOrFail(t testing.TB, s *Signer, st Statement) []byte {
	t.Helper()
	env, err := Sign(s, st)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// checkRoundTrip signs a statement with s and verifies it against s's line.
func checkRoundTrip(t *testing.T, s *Signer) {
	t.Helper()
	st := testStatement(t, PredicateResult)
	env := signOrFail(t, s, st)
	got, id, err := VerifyEnvelope(env, allowedFor(t, s.AllowedSignersLine(alice)), PredicateResult)
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, env)
	}
	if id != (Identity{Principals: alice, Fingerprint: s.Fingerprint()}) {
		t.Errorf("identity = %+v, want %s %s", id, alice, s.Fingerprint())
	}
	want, _ := json.Marshal(st)
	if have, _ := json.Marshal(got); !bytes.Equal(have, want) {
		t.Errorf("statement = %s, want %s", have, want)
	}
	var e envelope
	if err := json.Unmarshal(env, &e); err != nil || len(e.Signatures) != 1 || e.Signatures[0].KeyID != s.Fingerprint() {
		t.Errorf("envelope signatures = %+v (%v), want one with keyid %s", e.Signatures, err, s.Fingerprint())
	}
}

func TestSignLocalKey(t *testing.T) {
	s := localSigner(t)
	if !strings.Contains(s.String(), s.Fingerprint()) || !strings.Contains(s.String(), "local key file") {
		t.Errorf("String() = %q, want the fingerprint and the local key file", s)
	}
	checkRoundTrip(t, s)
}

func TestSignSSHKeyFile(t *testing.T) {
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(typ, func(t *testing.T) {
			s, err := LoadSigner(SignerConfig{Format: "ssh", SigningKey: newKeyFile(t, typ)})
			if err != nil {
				t.Fatal(err)
			}
			checkRoundTrip(t, s)
		})
	}
}

// TestPAEIsTheSpecs checks the encoding that is signed against the DSSE
// specification's own example, so that other DSSE implementations verify
// git-lease's envelopes (ssh-keygen checks the signature over it below).
func TestPAEIsTheSpecs(t *testing.T) {
	got := string(pae("http://example.com/HelloWorld", []byte("hello world")))
	if want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"; got != want {
		t.Fatalf("pae = %q, want %q", got, want)
	}
}

func TestSignInteropSSHKeygen(t *testing.T) {
	dir := t.TempDir()
	key := newKeyFile(t, "ed25519")
	s, err := LoadSigner(SignerConfig{Format: "ssh", SigningKey: key})
	if err != nil {
		t.Fatal(err)
	}
	allowedFile := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(allowedFile, []byte(s.AllowedSignersLine(alice)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("ssh-keygen verifies our signature", func(t *testing.T) {
		var e envelope
		if err := json.Unmarshal(signOrFail(t, s, testStatement(t, PredicateResult)), &e); err != nil {
			t.Fatal(err)
		}
		payload, _ := base64.StdEncoding.DecodeString(e.Payload)
		blob, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
		sigFile := filepath.Join(dir, "sig")
		if err := os.WriteFile(sigFile, pem.EncodeToMemory(&pem.Block{Type: "SSH SIGNATURE", Bytes: blob}), 0o644); err != nil {
			t.Fatal(err)
		}
		message := pae(e.PayloadType, payload)
		if out, err := sshKeygen(t, message, "-Y", "verify", "-f", allowedFile, "-I", alice, "-n", "git-lease", "-s", sigFile); err != nil {
			t.Fatalf("ssh-keygen -Y verify: %v\n%s", err, out)
		}
		if out, err := sshKeygen(t, message, "-Y", "verify", "-f", allowedFile, "-I", alice, "-n", "git", "-s", sigFile); err == nil {
			t.Fatalf("ssh-keygen accepted the signature in namespace git:\n%s", out)
		}
	})

	t.Run("we verify ssh-keygen's signature", func(t *testing.T) {
		payload, _ := json.Marshal(testStatement(t, PredicateCleanup))
		msgFile := filepath.Join(dir, "message")
		if err := os.WriteFile(msgFile, pae(PayloadType, payload), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := sshKeygen(t, nil, "-Y", "sign", "-f", key, "-n", "git-lease", msgFile); err != nil {
			t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
		}
		armored, err := os.ReadFile(msgFile + ".sig")
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(armored)
		env, _ := json.Marshal(envelope{PayloadType: PayloadType, Payload: base64.StdEncoding.EncodeToString(payload),
			Signatures: []envelopeSignature{{Sig: base64.StdEncoding.EncodeToString(block.Bytes)}}})
		if _, id, err := VerifyEnvelope(env, allowedFor(t, s.AllowedSignersLine(alice)), PredicateCleanup); err != nil || id.Fingerprint != s.Fingerprint() {
			t.Fatalf("VerifyEnvelope = %+v, %v", id, err)
		}
	})
}

// editEnvelope decodes env, lets edit change it, and encodes it again.
func editEnvelope(t *testing.T, env []byte, edit func(*envelope)) []byte {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	edit(&e)
	b, _ := json.Marshal(e)
	return b
}

func TestVerifyEnvelopeRejects(t *testing.T) {
	s, other := localSigner(t), localSigner(t)
	line := s.AllowedSignersLine(alice)
	allowed := allowedFor(t, line)
	env := signOrFail(t, s, testStatement(t, PredicateResult))
	payload, _ := json.Marshal(testStatement(t, PredicateResult))
	gitSig, err := sshsig.Sign(bytes.NewReader(pae(PayloadType, payload)), s.key, sshsig.HashSHA512, "git")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		env     []byte
		allowed *AllowedSigners
		want    error
		wantMsg string
	}{
		{"one changed byte in the payload", editEnvelope(t, env, func(e *envelope) {
			p, _ := base64.StdEncoding.DecodeString(e.Payload)
			p[bytes.Index(p, []byte("3f9c"))] = '4'
			e.Payload = base64.StdEncoding.EncodeToString(p)
		}), allowed, ErrBadSignature, ""},
		{"a key that is not allowed", signOrFail(t, other, testStatement(t, PredicateResult)), allowed, ErrUnknownSigner, other.Fingerprint()},
		{"no allowed signers at all", env, nil, ErrUnknownSigner, s.Fingerprint()},
		{"a wrong payload type", editEnvelope(t, env, func(e *envelope) { e.PayloadType = "application/json" }), allowed, ErrWrongPayloadType, ""},
		{"a wrong predicate type", signOrFail(t, s, testStatement(t, PredicateApply)), allowed, ErrWrongPredicateType, PredicateApply},
		{"a line for namespace git only", env, allowedFor(t, strings.Replace(line, " ", ` namespaces="git" `, 1)), ErrUnknownSigner, "namespace"},
		{"a negated namespace", env, allowedFor(t, strings.Replace(line, " ", ` namespaces="*,!git-lease" `, 1)), ErrUnknownSigner, "namespace"},
		{"an expired key", env, allowedFor(t, strings.Replace(line, " ", ` valid-before="20000101Z" `, 1)), ErrUnknownSigner, "expired"},
		{"a key not yet valid", env, allowedFor(t, strings.Replace(line, " ", ` valid-after="29990101" `, 1)), ErrUnknownSigner, "valid only after"},
		{"a cert-authority line", env, allowedFor(t, strings.Replace(line, " ", " cert-authority ", 1)), ErrUnknownSigner, "not in the allowed signers"},
		{"a signature for namespace git", editEnvelope(t, env, func(e *envelope) {
			e.Signatures[0].Sig = base64.StdEncoding.EncodeToString(gitSig.Marshal())
		}), allowed, ErrBadSignature, `namespace "git"`},
		{"a signature that is not SSHSIG", editEnvelope(t, env, func(e *envelope) { e.Signatures[0].Sig = "AAAA" }), allowed, ErrBadSignature, "not an SSH signature"},
		{"a truncated envelope", env[:len(env)/2], allowed, ErrMalformedEnvelope, ""},
		{"trailing data", append(bytes.Clone(env), '}'), allowed, ErrMalformedEnvelope, "trailing"},
		{"no signature", editEnvelope(t, env, func(e *envelope) { e.Signatures = nil }), allowed, ErrMalformedEnvelope, ""},
		{"an unknown field", bytes.Replace(env, []byte(`{"payloadType"`), []byte(`{"x":1,"payloadType"`), 1), allowed, ErrMalformedEnvelope, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _, err := VerifyEnvelope(tt.env, tt.allowed, PredicateResult)
			if !errors.Is(err, tt.want) || !strings.Contains(fmt.Sprint(err), tt.wantMsg) {
				t.Fatalf("VerifyEnvelope = %v, want %v mentioning %q", err, tt.want, tt.wantMsg)
			}
			t.Log(err)
			if st != nil {
				t.Errorf("got a statement with the error")
			}
		})
	}
	if _, _, err := VerifyEnvelope(env, allowed, PredicateResult); err != nil {
		t.Fatalf("the untouched envelope does not verify: %v", err)
	}
}
