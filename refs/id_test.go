package refs

import (
	"errors"
	"strings"
	"testing"
)

func TestParseIDAcceptsOnlyTwelveLowercaseHex(t *testing.T) {
	for _, s := range []string{"3f9c0a1b2d4e", "000000000000"} {
		if _, err := ParseID(s); err != nil {
			t.Errorf("ParseID(%q) = %v, want ok", s, err)
		}
	}
	for _, s := range []string{"", "3f9c", "3F9C0A1B2D4E", "3f9c0a1b2d4g", "3f9c0a1b2d4e0", "../../etc/x", "3f9c0a1b2d4\n"} {
		if _, err := ParseID(s); !errors.Is(err, ErrBadID) {
			t.Errorf("ParseID(%q) = %v, want ErrBadID", s, err)
		}
	}
}

func TestResolveFindsUniquePrefixAndNamesCandidates(t *testing.T) {
	known := []ID{"3f9c0a1b2d4e", "3f9c77777777", "aaaa00000000"}
	if id, err := Resolve("aaaa", known); err != nil || id != "aaaa00000000" {
		t.Fatalf("Resolve(aaaa) = %q, %v", id, err)
	}
	if id, err := Resolve("3f9c0", known); err != nil || id != "3f9c0a1b2d4e" {
		t.Fatalf("Resolve(3f9c0) = %q, %v", id, err)
	}
	_, err := Resolve("3f9c", known)
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "3f9c0a1b2d4e, 3f9c77777777") {
		t.Fatalf("Resolve(3f9c) = %v, want ambiguity naming both", err)
	}
	if _, err := Resolve("bbbb", known); !errors.Is(err, ErrNoLease) {
		t.Fatalf("Resolve(bbbb) = %v, want ErrNoLease", err)
	}
	if _, err := Resolve("3f9", known); !errors.Is(err, ErrBadID) {
		t.Fatalf("Resolve(3f9) = %v, want ErrBadID (too short)", err)
	}
}

func TestNewIDSkipsTakenIDs(t *testing.T) {
	next := seededID("x")
	first, _ := next(0)
	second, err := findID(func(id ID) bool { return id == first }, next)
	if err != nil || second == first {
		t.Fatalf("findID with the first taken = %q, %v", second, err)
	}
	if _, err := ParseID(string(second)); err != nil {
		t.Fatal(err)
	}
}
