package refs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// IDLen is the length of an execution ID: 12 lowercase hex characters.
const IDLen = 12

// MinPrefix is the shortest prefix a user may type for an ID.
const MinPrefix = 4

var (
	// ErrBadID is returned for a string that is not a valid ID or prefix.
	ErrBadID = errors.New("not a lease ID (want 4 to 12 lowercase hex characters)")
	// ErrNoLease is returned when no lease matches an ID or prefix.
	ErrNoLease = errors.New("no such lease (see git lease ls)")
	// ErrAmbiguous is returned when a prefix matches more than one lease.
	ErrAmbiguous = errors.New("ambiguous lease ID prefix")
)

// ID is a validated execution ID. Every ref name, branch name, path and
// provider identity of a lease is derived from it, so it is only ever built by
// NewID or ParseID.
type ID string

// ParseID accepts exactly 12 lowercase hex characters.
func ParseID(s string) (ID, error) {
	if len(s) != IDLen || !isLowerHex(s) {
		return "", fmt.Errorf("%q: %w", s, ErrBadID)
	}
	return ID(s), nil
}

// ValidPrefix reports whether s may be used to look up an ID.
func ValidPrefix(s string) bool {
	return len(s) >= MinPrefix && len(s) <= IDLen && isLowerHex(s)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// LogRef is the lease log of id.
func (id ID) LogRef() string { return "refs/leases/" + string(id) }

// Branch is the short name of the review branch of id.
func (id ID) Branch() string { return "lease/" + string(id) }

// BranchRef is the full ref name of the review branch of id.
func (id ID) BranchRef() string { return "refs/heads/lease/" + string(id) }

// Short is the first 8 characters, for tables.
func (id ID) Short() string { return string(id)[:8] }

// NewID returns a fresh random ID for which taken reports false.
func NewID(taken func(ID) bool) (ID, error) { return findID(taken, idSource()) }

// findID returns the first ID that next gives (for n = 0, 1, …) that is not
// taken.
func findID(taken func(ID) bool, next func(n int) (ID, error)) (ID, error) {
	for n := 0; n < 1000; n++ {
		id, err := next(n)
		if err != nil {
			return "", err
		}
		if !taken(id) {
			return id, nil
		}
	}
	return "", errors.New("could not find an unused lease ID")
}

// randomID is an ID from the system's CSPRNG: unpredictable, so that
// leases of different clones never collide.
func randomID(int) (ID, error) {
	b := make([]byte, IDLen/2)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return ID(hex.EncodeToString(b)), nil
}

// seededID derives IDs from seed and n, for tests whose output must not
// change from run to run.
func seededID(seed string) func(n int) (ID, error) {
	return func(n int) (ID, error) {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s:%d", seed, n)))
		return ID(hex.EncodeToString(sum[:])[:IDLen]), nil
	}
}

// Resolve finds the one ID among known that starts with prefix. It returns
// ErrNoLease or ErrAmbiguous (naming the candidates) otherwise.
func Resolve(prefix string, known []ID) (ID, error) {
	if !ValidPrefix(prefix) {
		return "", fmt.Errorf("%q: %w", prefix, ErrBadID)
	}
	var hits []string
	for _, id := range known {
		if strings.HasPrefix(string(id), prefix) {
			hits = append(hits, string(id))
		}
	}
	switch len(hits) {
	case 0:
		return "", fmt.Errorf("%s: %w", prefix, ErrNoLease)
	case 1:
		return ID(hits[0]), nil
	}
	sort.Strings(hits)
	return "", fmt.Errorf("%s: %w: it matches %s", prefix, ErrAmbiguous, strings.Join(hits, ", "))
}
