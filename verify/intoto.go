package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sync"
)

// StatementType is the _type of every in-toto statement git-lease signs.
const StatementType = "https://in-toto.io/Statement/v1"

// Predicate types of git-lease's four signed records. The version is part of
// the URI: a new predicate format gets a new URI.
const (
	PredicateResult  = "https://git-lease.dev/result/v1"
	PredicateApply   = "https://git-lease.dev/apply/v1"
	PredicateReject  = "https://git-lease.dev/reject/v1"
	PredicateCleanup = "https://git-lease.dev/cleanup/v1"
)

var (
	// ErrBadStatement is returned for a statement that does not decode or
	// lacks a required part.
	ErrBadStatement = errors.New("invalid in-toto statement")
	// ErrWrongPredicateType is returned when a verified statement is a
	// different kind of record than the caller asked for.
	ErrWrongPredicateType = errors.New("wrong predicate type")
)

// Subject is one artifact a statement is about. Digest maps an algorithm
// (sha1, sha256, gitCommit, gitTree) to lowercase hex; gitCommit and gitTree
// take SHA-1 or SHA-256 object names.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Statement is an in-toto v1 statement. Predicate holds the record itself
// as a JSON object; decode it into the type its PredicateType names.
type Statement struct {
	Type          string          `json:"_type"`
	Subject       []Subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// digestRE gives the accepted form of each digest algorithm, compiled on
// first use (see hexRE).
var digestRE = sync.OnceValue(func() map[string]*regexp.Regexp {
	return map[string]*regexp.Regexp{
		"sha1":      regexp.MustCompile(`^[0-9a-f]{40}$`),
		"sha256":    regexp.MustCompile(`^[0-9a-f]{64}$`),
		"gitCommit": regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`),
		"gitTree":   regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`),
	}
})

// NewStatement makes a statement of predicateType about subjects, encoding
// predicate (a struct or map that encodes as a JSON object) as its
// predicate. It fails with ErrBadStatement when there is no subject, a
// digest is malformed, or the predicate is not a JSON object.
func NewStatement(predicateType string, predicate any, subjects ...Subject) (Statement, error) {
	p, err := json.Marshal(predicate)
	if err != nil {
		return Statement{}, fmt.Errorf("%w: predicate: %v", ErrBadStatement, err)
	}
	st := Statement{Type: StatementType, Subject: subjects, PredicateType: predicateType, Predicate: p}
	return st, st.check(predicateType)
}

// parseStatement decodes a statement strictly (no unknown fields, no
// trailing data) and checks it is of type wantPredicateType.
func parseStatement(b []byte, wantPredicateType string) (*Statement, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var st Statement
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadStatement, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data", ErrBadStatement)
	}
	if err := st.check(wantPredicateType); err != nil {
		return nil, err
	}
	return &st, nil
}

func (st *Statement) check(wantPredicateType string) error {
	if st.Type != StatementType {
		return fmt.Errorf("%w: _type %q, want %q", ErrBadStatement, st.Type, StatementType)
	}
	if st.PredicateType == "" {
		return fmt.Errorf("%w: no predicateType", ErrBadStatement)
	}
	if st.PredicateType != wantPredicateType {
		return fmt.Errorf("%w: got %q, want %q", ErrWrongPredicateType, st.PredicateType, wantPredicateType)
	}
	if len(st.Subject) == 0 {
		return fmt.Errorf("%w: no subject", ErrBadStatement)
	}
	for _, s := range st.Subject {
		if s.Name == "" || len(s.Digest) == 0 {
			return fmt.Errorf("%w: subject %q needs a name and a digest", ErrBadStatement, s.Name)
		}
		for _, alg := range slices.Sorted(maps.Keys(s.Digest)) {
			re, ok := digestRE()[alg]
			if !ok || !re.MatchString(s.Digest[alg]) {
				return fmt.Errorf("%w: subject %q: bad %s digest %q (known: gitCommit, gitTree, sha1, sha256; lowercase hex)", ErrBadStatement, s.Name, alg, s.Digest[alg])
			}
		}
	}
	if p := bytes.TrimSpace(st.Predicate); len(p) == 0 || p[0] != '{' {
		return fmt.Errorf("%w: predicate is not a JSON object", ErrBadStatement)
	}
	return nil
}
