package verify

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGBSXmAycWEVOnYL59of3vx2t/IHzxE6rvCBvt2invsF"

func TestParseAllowedSigners(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		file       string
		principals string // "" when the key must not be authorized for git-lease
	}{
		{"a plain line", alice + " " + testKey, alice},
		{"comments, blank lines and CRLF", "# team\n\n   \r\n" + alice + " " + testKey + " alice's laptop\r\n", alice},
		{"several principals with wildcards", "alice@example.com,*@corp.example " + testKey, "alice@example.com,*@corp.example"},
		{"quoted principals", `"alice@example.com,bob@example.com" ` + testKey, "alice@example.com,bob@example.com"},
		{"namespaces listing git-lease", alice + ` namespaces="git,git-lease" ` + testKey, alice},
		{"a namespace wildcard", alice + ` namespaces="git*" ` + testKey, alice},
		{"option names in any case", alice + ` NAMESPACES="git-lease" ` + testKey, alice},
		{"namespaces for git only", alice + ` namespaces="git" ` + testKey, ""},
		{"an empty namespaces list", alice + ` namespaces="" ` + testKey, ""},
		{"a negated namespace", alice + ` namespaces="*,!git-lease" ` + testKey, ""},
		{"inside the validity", alice + ` valid-after="20260101",valid-before="202607011200Z" ` + testKey, alice},
		{"expired", alice + ` valid-before="20260531235959Z" ` + testKey, ""},
		{"not yet valid", alice + ` valid-after="20260602Z" ` + testKey, ""},
		{"a cert-authority line is ignored", "*@example.com cert-authority " + testKey, ""},
		{"the first authorizing line wins", alice + ` namespaces="git" ` + testKey + "\nbob@example.com " + testKey, "bob@example.com"},
		{"an empty file", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAllowedSigners(strings.NewReader(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			key := allowedFor(t, alice+" "+testKey).entries[0].key
			id, err := a.authorize(key, SignatureNamespace, now)
			if tt.principals == "" {
				if !errors.Is(err, ErrUnknownSigner) {
					t.Errorf("authorize = %+v, %v; want ErrUnknownSigner", id, err)
				}
				return
			}
			if err != nil || id.Principals != tt.principals || !strings.HasPrefix(id.Fingerprint, "SHA256:") {
				t.Errorf("authorize = %+v, %v; want principals %q", id, err, tt.principals)
			}
		})
	}
}

func TestParseAllowedSignersErrors(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"principals only", "# c\n" + alice, "line 2: missing key"},
		{"no key", "\n" + alice + " hello world", "line 2: no valid key"},
		{"a bad key", alice + " ssh-ed25519 AAAA", "line 1: no valid key"},
		{"a key of the wrong type", alice + " ssh-rsa " + strings.Fields(testKey)[1], "line 1: no valid key"},
		{"an unterminated quote", `"alice@example.com ` + testKey, "line 1: unterminated quote"},
		{"an empty principal", `"" ` + testKey, "line 1: empty principals"},
		{"an unknown option", alice + ` restrict ` + testKey, `line 1: unknown option "restrict"`},
		{"an unknown option with a value", alice + ` from="x" ` + testKey, `unknown option "from=\"x\""`},
		{"an unquoted value", alice + ` namespaces=git ` + testKey, "double quotes"},
		{"an option given twice", alice + ` namespaces="a",namespaces="b" ` + testKey, "given twice"},
		{"a bad time", alice + ` valid-after="2026-01-01" ` + testKey, "YYYYMMDD"},
		{"an impossible date", alice + ` valid-after="20261301" ` + testKey, "valid-after"},
		{"an empty validity", alice + ` valid-after="20260102",valid-before="20260101" ` + testKey, "not after"},
		{"a line too long", alice + " " + strings.Repeat("x", 70000), "line 1: bufio.Scanner: token too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseAllowedSigners(strings.NewReader(tt.file))
			if !errors.Is(err, ErrBadAllowedSigners) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseAllowedSigners = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestAllowedPatterns(t *testing.T) {
	tests := []struct {
		s, list string
		want    bool
	}{
		{"git-lease", "git-lease", true},
		{"git-lease", "git", false},
		{"git-lease", "git,git-lease", true},
		{"git-lease", "git*", true},
		{"git-lease", "git-?ease", true},
		{"git-lease", "*-*-*", false},
		{"git-lease", "*", true},
		{"git-lease", "*,!git-lease", false},
		{"git-lease", "!git", false},
		{"git-lease", "!git,*lease", true},
		{"git-lease", "", false},
		{"", "*", true},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "*a*a*a*a*a*a*a*a*a*a*a*a*ac", false},
	}
	for _, tt := range tests {
		if got := matchList(tt.s, strings.Split(tt.list, ",")); got != tt.want {
			t.Errorf("matchList(%q, %q) = %v, want %v", tt.s, tt.list, got, tt.want)
		}
	}
}
