package policy

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// tomlKeys lists the dotted TOML keys of t's fields, down to the first
// field that is not a struct (a map is one key: its entries are the user's
// names).
func tomlKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, tomlKeys(f.Type, prefix+name+".")...)
			continue
		}
		keys = append(keys, prefix+name)
	}
	return keys
}

// TestEveryPolicyKeyHasANarrowingRule: a key added to Policy must be named
// in policyKeys (or trustedOnlyKeys) and have a rule in narrowing, or a
// .lease.toml could set it unchecked.
func TestEveryPolicyKeyHasANarrowingRule(t *testing.T) {
	listed := append(slices.Clone(policyKeys), trustedOnlyKeys...)
	for _, k := range tomlKeys(reflect.TypeOf(Policy{}), "") {
		if !slices.Contains(listed, k) {
			t.Errorf("policy key %s is in neither policyKeys nor trustedOnlyKeys", k)
		}
		if narrowing[k] == nil {
			t.Errorf("policy key %s has no narrowing rule", k)
		}
	}
	for k := range narrowing {
		if !slices.Contains(listed, k) {
			t.Errorf("narrowing has a rule for %s, which is no policy key", k)
		}
	}
}
