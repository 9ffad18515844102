package verify

import (
	"strings"
	"testing"
	"time"
)

func FuzzParseAllowedSigners(f *testing.F) {
	for _, seed := range []string{
		alice + " " + testKey,
		"# c\n\n" + alice + ",*@corp " + testKey + " comment\r\n",
		`"a@x,b@y" namespaces="git,!git-lease",valid-after="20260101Z" ` + testKey,
		`a@x cert-authority,valid-before="202601011200" ` + testKey,
		`a@x namespaces="a\"b" ` + testKey,
		`"unterminated ` + testKey,
	} {
		f.Add(seed)
	}
	key := allowedFor(f, alice+" "+testKey).entries[0].key
	f.Fuzz(func(t *testing.T, file string) {
		a, err := ParseAllowedSigners(strings.NewReader(file))
		if err != nil {
			return
		}
		for _, e := range a.entries {
			if e.key == nil || e.principals == "" || e.line < 1 {
				t.Fatalf("entry %+v from %q", e, file)
			}
		}
		id, err := a.authorize(key, SignatureNamespace, time.Now())
		if err == nil && id.Principals == "" {
			t.Fatalf("authorized without principals: %q", file)
		}
	})
}
