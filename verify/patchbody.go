package verify

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	hunkRE   = regexp.MustCompile(`^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@`)
	binaryRE = regexp.MustCompile(`^(?:literal|delta) \d+$`)
)

const (
	noNewlineAt = "\\ No newline at end of file"
	base85      = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
)

// hunks reads one or more text hunks and checks that each has exactly the
// lines its header counts, so no line of content can pass for a header.
func (r *lineReader) hunks() error {
	for first := true; ; first = false {
		h, _ := r.peek()
		m := hunkRE.FindSubmatch(h)
		if m == nil {
			if first {
				return errors.New(`missing "@@" hunk header`)
			}
			return nil
		}
		r.next()
		old, okOld := hunkCount(m[1])
		nw, okNew := hunkCount(m[2])
		if !okOld || !okNew {
			return fmt.Errorf("bad hunk header %q", h)
		}
		for old > 0 || nw > 0 {
			l, ok := r.next()
			switch {
			case !ok:
				return errors.New("the patch ends inside a hunk")
			case len(l) > 0 && l[0] == ' ' && old > 0 && nw > 0:
				old, nw = old-1, nw-1
			case len(l) > 0 && l[0] == '-' && old > 0:
				old--
			case len(l) > 0 && l[0] == '+' && nw > 0:
				nw--
			case string(l) != noNewlineAt:
				return fmt.Errorf("line %q does not fit the hunk", l)
			}
		}
		if l, _ := r.peek(); string(l) == noNewlineAt {
			r.next()
		}
	}
}

// hunkCount reads a hunk header's line count, which is 1 when omitted.
func hunkCount(b []byte) (int, bool) {
	if len(b) == 0 {
		return 1, true
	}
	n, err := strconv.Atoi(string(b))
	return n, err == nil
}

// binaryBody reads the two hunks (forward, then reverse) of a "GIT binary
// patch": a "literal N" or "delta N" line, base85 lines, an empty line.
func (r *lineReader) binaryBody() error {
	for range 2 {
		if h, _ := r.next(); !binaryRE.Match(h) {
			return fmt.Errorf("bad binary hunk header %q", h)
		}
		for n := 0; ; n++ {
			l, ok := r.next()
			if !ok {
				return errors.New("the patch ends inside a binary hunk")
			}
			if len(l) == 0 && n > 0 {
				break
			}
			if !isBase85Line(string(l)) {
				return fmt.Errorf("bad binary patch line %q", l)
			}
		}
	}
	return nil
}

// isBase85Line checks one line of git's binary encoding: a letter giving
// the byte count (A-Z 1-26, a-z 27-52), then five characters per four bytes.
func isBase85Line(l string) bool {
	if l == "" {
		return false
	}
	var n int
	switch c := l[0]; {
	case c >= 'A' && c <= 'Z':
		n = int(c-'A') + 1
	case c >= 'a' && c <= 'z':
		n = int(c-'a') + 27
	default:
		return false
	}
	return len(l) == 1+5*((n+3)/4) && strings.Trim(l[1:], base85) == ""
}

// diffGitPath reads the names of a "diff --git" line, "a/<path> b/<path>"
// with both C-quoted or neither, and returns the path. Unquoted names may
// hold spaces, so they are split in the middle: with no renames, both sides
// name the same path.
func diffGitPath(s string) (string, error) {
	var a, b string
	if strings.HasPrefix(s, `"`) {
		var rest string
		var err error
		if a, rest, err = unquoteC(s); err == nil {
			var ok bool
			if rest, ok = strings.CutPrefix(rest, ` "`); !ok {
				err = errors.New("only one name is quoted")
			} else if b, rest, err = unquoteC(`"` + rest); err == nil && rest != "" {
				err = errors.New("text after the names")
			}
		}
		if err != nil {
			return "", fmt.Errorf("diff --git %s: %v", s, err)
		}
	} else if !isPlainName(s) {
		return "", fmt.Errorf("diff --git %s: a name that needs quoting is not quoted (use core.quotePath=true)", s)
	} else if n := (len(s) - 1) / 2; len(s)%2 == 1 && s[n] == ' ' {
		a, b = s[:n], s[n+1:]
	}
	path, okA := strings.CutPrefix(a, "a/")
	pathB, okB := strings.CutPrefix(b, "b/")
	if !okA || !okB || path != pathB || path == "" {
		return "", fmt.Errorf("diff --git %s: want a/<path> b/<path> with the same path (renames are not canonical)", s)
	}
	return path, nil
}

// patchName reads the name on a "---" or "+++" line. git ends a name that
// holds a space with a tab, so that the name's end is visible.
func patchName(s string) (string, error) {
	if strings.Contains(s, " ") {
		var ok bool
		if s, ok = strings.CutSuffix(s, "\t"); !ok {
			return "", errors.New("a name with a space must end with a tab")
		}
	}
	if !strings.HasPrefix(s, `"`) {
		if !isPlainName(s) {
			return "", errors.New("a name that needs quoting is not quoted")
		}
		return s, nil
	}
	name, rest, err := unquoteC(s)
	if err == nil && rest != "" {
		err = errors.New("text after the name")
	}
	return name, err
}

// isPlainName reports whether git would print s without quotes: no
// control characters, quotes, backslashes or bytes outside ASCII.
func isPlainName(s string) bool {
	for i := range len(s) {
		if needsQuote(s[i]) {
			return false
		}
	}
	return true
}

func needsQuote(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x7f }

// unquoteC reads a C-quoted name at the start of s, as git's quote_c_style
// writes it, and returns it with the rest of s.
func unquoteC(s string) (name, rest string, err error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), s[i+1:], nil
		case c != '\\':
			if needsQuote(c) {
				return "", "", fmt.Errorf("byte %#x must be escaped in a quoted name", c)
			}
			b.WriteByte(c)
		case i+1 < len(s) && strings.IndexByte(`abtnvfr"\`, s[i+1]) >= 0:
			i++
			b.WriteByte("\a\b\t\n\v\f\r\"\\"[strings.IndexByte(`abtnvfr"\`, s[i])])
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]):
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
		default:
			return "", "", errors.New("bad escape in a quoted name")
		}
	}
	return "", "", errors.New("a quoted name is not closed")
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
