package verify

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// ErrBadAllowedSigners is returned for an allowed-signers file that does not
// parse; the message names the line.
var ErrBadAllowedSigners = errors.New("invalid allowed signers")

// AllowedSigners is a parsed allowed-signers file in the format of git's
// gpg.ssh.allowedSignersFile and `ssh-keygen -Y verify -f` (see "ALLOWED
// SIGNERS" in ssh-keygen(1)). The zero value allows nobody.
type AllowedSigners struct {
	entries []allowedSigner
}

// Identity is who signed: the principals field of the allowed-signers line
// that authorized the key (comma-separated patterns, as written) and the
// key's SHA256 fingerprint.
type Identity struct {
	Principals  string
	Fingerprint string
}

type allowedSigner struct {
	line        int
	principals  string
	key         ssh.PublicKey
	namespaces  []string  // patterns; nil allows every namespace
	validAfter  time.Time // zero: no lower bound
	validBefore time.Time // zero: no upper bound
}

// ParseAllowedSigners reads lines of the form
//
//	principals [options] keytype base64-key [comment]
//
// Principals are comma-separated patterns, optionally in double quotes.
// Options are namespaces="…", valid-after="…", valid-before="…" and
// cert-authority. Lines marked cert-authority are skipped: git-lease accepts
// signatures by plain keys only, and ssh-keygen never lets a CA line
// authorize its own key either. Blank lines and lines starting with '#' are
// ignored. An empty input allows nobody. Errors name the line.
func ParseAllowedSigners(r io.Reader) (*AllowedSigners, error) {
	var a AllowedSigners
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		e, ca, err := parseAllowedLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadAllowedSigners, n, err)
		}
		if !ca {
			e.line = n
			a.entries = append(a.entries, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrBadAllowedSigners, n+1, err)
	}
	return &a, nil
}

// parseAllowedLine parses one non-blank line; ca reports a cert-authority line.
func parseAllowedLine(line string) (e allowedSigner, ca bool, err error) {
	var rest string
	if strings.HasPrefix(line, `"`) {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return e, false, errors.New("unterminated quote in principals")
		}
		e.principals, rest = line[1:end+1], line[end+2:]
	} else {
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return e, false, errors.New("missing key (want: principals [options] keytype base64-key)")
		}
		e.principals, rest = line[:i], line[i:]
	}
	if e.principals == "" {
		return e, false, errors.New("empty principals")
	}
	key, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return e, false, fmt.Errorf("no valid key after the principals (want: principals [options] keytype base64-key): %v", err)
	}
	e.key = key
	ca, err = e.setOptions(opts)
	return e, ca, err
}

// setOptions applies the options of a line as ssh-keygen does: names are
// case-insensitive, values are double-quoted, each option appears once.
func (e *allowedSigner) setOptions(opts []string) (ca bool, err error) {
	seen := map[string]bool{}
	for _, o := range opts {
		name, value, hasValue := strings.Cut(o, "=")
		name = strings.ToLower(name)
		if seen[name] {
			return false, fmt.Errorf("option %s given twice", name)
		}
		seen[name] = true
		switch {
		case name == "cert-authority" && !hasValue:
			ca = true
			continue
		case name != "namespaces" && name != "valid-after" && name != "valid-before":
			return false, fmt.Errorf("unknown option %q (known: namespaces, valid-after, valid-before, cert-authority)", o)
		}
		v, err := dequote(value)
		if err != nil {
			return false, fmt.Errorf("option %s: %v", name, err)
		}
		switch name {
		case "namespaces":
			e.namespaces = strings.Split(v, ",")
		case "valid-after":
			e.validAfter, err = parseSSHTime(v)
		case "valid-before":
			e.validBefore, err = parseSSHTime(v)
		}
		if err != nil {
			return false, fmt.Errorf("option %s: %v", name, err)
		}
	}
	if !e.validAfter.IsZero() && !e.validBefore.IsZero() && !e.validBefore.After(e.validAfter) {
		return false, errors.New("valid-before is not after valid-after")
	}
	return ca, nil
}

// dequote removes the double quotes around an option value and unescapes \".
func dequote(v string) (string, error) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", errors.New("value is not in double quotes")
	}
	return strings.ReplaceAll(v[1:len(v)-1], `\"`, `"`), nil
}

// parseSSHTime parses ssh-keygen's YYYYMMDD[HHMM[SS]] timestamps: local
// time, or UTC with a trailing Z.
func parseSSHTime(s string) (time.Time, error) {
	loc := time.Local
	if t, ok := strings.CutSuffix(strings.ToUpper(s), "Z"); ok {
		s, loc = t, time.UTC
	}
	layouts := map[int]string{8: "20060102", 12: "200601021504", 14: "20060102150405"}
	layout, ok := layouts[len(s)]
	if !ok {
		return time.Time{}, fmt.Errorf("time %q: want YYYYMMDD[HHMM[SS]][Z]", s)
	}
	return time.ParseInLocation(layout, s, loc)
}

// authorize finds the line that lets key sign in namespace at time now. A
// key that is missing, restricted to other namespaces, or outside its
// validity is an ErrUnknownSigner whose message says which and what to do.
func (a *AllowedSigners) authorize(key ssh.PublicKey, namespace string, now time.Time) (Identity, error) {
	fp := ssh.FingerprintSHA256(key)
	if _, ok := key.(*ssh.Certificate); ok {
		return Identity{}, fmt.Errorf("%w: %s is an SSH certificate; git-lease accepts plain keys only (cert-authority lines are ignored)", ErrUnknownSigner, fp)
	}
	why := fmt.Sprintf("key %s is not in the allowed signers; add its line (`git lease keys show` prints it on the signer's machine)", fp)
	for _, e := range a.entries {
		if !bytes.Equal(e.key.Marshal(), key.Marshal()) {
			continue
		}
		switch {
		case e.namespaces != nil && !matchList(namespace, e.namespaces):
			why = fmt.Sprintf("key %s (%s, line %d) is not allowed for namespace %q; add it to namespaces=\"…\"", fp, e.principals, e.line, namespace)
		case !e.validAfter.IsZero() && now.Before(e.validAfter):
			why = fmt.Sprintf("key %s (%s, line %d) is valid only after %s", fp, e.principals, e.line, e.validAfter)
		case !e.validBefore.IsZero() && now.After(e.validBefore):
			why = fmt.Sprintf("key %s (%s, line %d) expired at %s", fp, e.principals, e.line, e.validBefore)
		default:
			return Identity{Principals: e.principals, Fingerprint: fp}, nil
		}
	}
	return Identity{}, fmt.Errorf("%w: %s", ErrUnknownSigner, why)
}

// matchList reports whether s matches a list of patterns as OpenSSH's
// match_pattern_list does: some pattern matches and no negated pattern
// ("!p") does.
func matchList(s string, patterns []string) bool {
	matched := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		if !glob(strings.TrimPrefix(p, "!"), s) {
			continue
		}
		if neg {
			return false
		}
		matched = true
	}
	return matched
}

// glob matches s against p, where '*' matches any run of bytes and '?' one
// byte. It backtracks only to the last '*', so it runs in O(len(p)·len(s)).
func glob(p, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, -1
	for px < len(p) || sx < len(s) {
		if px < len(p) {
			switch c := p[px]; {
			case c == '*':
				starP, starS = px, sx+1
				px++
				continue
			case sx < len(s) && (c == '?' || c == s[sx]):
				px++
				sx++
				continue
			}
		}
		if starP >= 0 && starS <= len(s) {
			px, sx = starP+1, starS
			starS++
			continue
		}
		return false
	}
	return true
}
