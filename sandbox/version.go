package sandbox

import "strings"

// Version is a release's major.minor.patch, as the Crabbox and Herdr
// adapters compare them with the oldest release they were written against.
type Version [3]int

// ParseVersion reads major.minor.patch from a version such as 0.8.2,
// v0.9.0 or 0.9.0-rc.1 (what follows the patch number is ignored).
func ParseVersion(s string) (Version, bool) {
	var v Version
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	for i := range v {
		n, digits := 0, 0
		for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
			if n > 1<<20 {
				return v, false
			}
			n = n*10 + int(s[digits]-'0')
			digits++
		}
		if digits == 0 {
			return v, false
		}
		v[i], s = n, s[digits:]
		if i < 2 {
			if !strings.HasPrefix(s, ".") {
				return v, false
			}
			s = s[1:]
		}
	}
	return v, true
}

// Less reports whether v is an older release than w.
func (v Version) Less(w Version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}
