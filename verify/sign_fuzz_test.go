package verify

import (
	"bytes"
	"testing"
)

func FuzzVerifyEnvelope(f *testing.F) {
	s := localSigner(f)
	allowed := allowedFor(f, s.AllowedSignersLine(alice))
	env := signOrFail(f, s, testStatement(f, PredicateResult))
	f.Add(env)
	f.Add(env[:len(env)/2])
	f.Add(signOrFail(f, s, testStatement(f, PredicateApply)))
	f.Add([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"","signatures":[{"keyid":"","sig":"AAAA"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, id, err := VerifyEnvelope(b, allowed, PredicateResult)
		if err != nil {
			if st != nil {
				t.Fatal("a statement with an error")
			}
			return
		}
		// Only s can sign; the fuzzer may change unsigned parts only.
		if id.Fingerprint != s.Fingerprint() || st.PredicateType != PredicateResult {
			t.Fatalf("accepted %q as %+v", b, id)
		}
		if _, err := decodeEnvelope(b); err != nil {
			t.Fatalf("verified an envelope that does not decode: %v", err)
		}
	})
}

func FuzzStatement(f *testing.F) {
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"b","digest":{"gitCommit":"` +
		string(bytes.Repeat([]byte("e"), 40)) + `"}}],"predicateType":"https://git-lease.dev/apply/v1","predicate":{}}`))
	f.Add([]byte(`{"_type":"x","subject":null,"predicate":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStatement(b, PredicateApply)
		if err != nil {
			return
		}
		if len(st.Subject) == 0 || st.PredicateType != PredicateApply {
			t.Fatalf("accepted %q", b)
		}
	})
}
