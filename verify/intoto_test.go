package verify

import (
	"errors"
	"strings"
	"testing"
)

func TestStatementChecks(t *testing.T) {
	commit := map[string]string{"gitCommit": strings.Repeat("c", 40)}
	tests := []struct {
		name      string
		predicate any
		subjects  []Subject
		want      string
	}{
		{"no subject", map[string]int{}, nil, "no subject"},
		{"a subject without a name", map[string]int{}, []Subject{{Digest: commit}}, "needs a name"},
		{"a subject without a digest", map[string]int{}, []Subject{{Name: "base"}}, "needs a name and a digest"},
		{"an unknown digest", map[string]int{}, []Subject{{Name: "base", Digest: map[string]string{"md5": "00"}}}, "bad md5 digest"},
		{"an uppercase digest", map[string]int{}, []Subject{{Name: "base", Digest: map[string]string{"sha1": strings.Repeat("A", 40)}}}, "bad sha1 digest"},
		{"a short sha256", map[string]int{}, []Subject{{Name: "p", Digest: map[string]string{"sha256": "abc"}}}, "bad sha256 digest"},
		{"a predicate that is no object", []int{1}, []Subject{{Name: "base", Digest: commit}}, "not a JSON object"},
		{"a null predicate", nil, []Subject{{Name: "base", Digest: commit}}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewStatement(PredicateReject, tt.predicate, tt.subjects...)
			if !errors.Is(err, ErrBadStatement) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewStatement = %v, want ErrBadStatement saying %q", err, tt.want)
			}
		})
	}
	sha256Tree := map[string]string{"gitTree": strings.Repeat("d", 64)}
	if _, err := NewStatement(PredicateReject, struct{}{}, Subject{Name: "result tree", Digest: sha256Tree}); err != nil {
		t.Errorf("a SHA-256 tree: %v", err)
	}
	if _, err := NewStatement("", struct{}{}, Subject{Name: "base", Digest: commit}); !errors.Is(err, ErrBadStatement) {
		t.Errorf("no predicate type: %v, want ErrBadStatement", err)
	}
}

func TestStatementParse(t *testing.T) {
	good := `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"b","digest":{"sha1":"` + strings.Repeat("e", 40) + `"}}],"predicateType":"https://git-lease.dev/apply/v1","predicate":{}}`
	if _, err := parseStatement([]byte(good), PredicateApply); err != nil {
		t.Fatalf("parse: %v", err)
	}
	tests := []struct {
		name, json string
		want       error
	}{
		{"another _type", strings.Replace(good, "Statement/v1", "Statement/v0.1", 1), ErrBadStatement},
		{"an unknown field", strings.Replace(good, `"predicate":`, `"x":1,"predicate":`, 1), ErrBadStatement},
		{"trailing data", good + `{}`, ErrBadStatement},
		{"another predicate type", strings.Replace(good, "apply", "reject", 1), ErrWrongPredicateType},
		{"no predicate type", strings.Replace(good, PredicateApply, "", 1), ErrBadStatement},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseStatement([]byte(tt.json), PredicateApply); !errors.Is(err, tt.want) {
				t.Fatalf("parseStatement = %v, want %v", err, tt.want)
			}
		})
	}
}
