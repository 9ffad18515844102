package verify

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

const gitmodulesFile = ".gitmodules"

// CheckGitmodules checks the content of a .gitmodules that policy allows
// for the tricks that make git write or run something the user did not ask
// for: submodule names and paths with ".." components or a leading "-"
// (CVE-2018-11235, CVE-2018-17456), URLs that start with "-" or hide control
// characters (CVE-2020-5260), "update = !command" (CVE-2019-19604), and
// paths that break CheckPath (".git/hooks", a trailing CR as in
// CVE-2025-48384). It reads the git config syntax strictly: anything
// `git submodule add` would not write, such as line continuations, is a
// finding rather than a guess at how git would read it.
func CheckGitmodules(content []byte) []Finding {
	vars, err := parseConfig(string(content))
	if err != nil {
		return []Finding{*newFinding(RuleGitmodules, gitmodulesFile,
			"%v; git-lease reads .gitmodules strictly, so write it as `git submodule add` does", err)}
	}
	var out []Finding
	bad := func(format string, args ...any) {
		out = append(out, *newFinding(RuleGitmodules, gitmodulesFile, format, args...))
	}
	for _, v := range vars {
		if v.section != "submodule" || !v.named {
			continue // git reads submodules only from [submodule "name"] sections
		}
		if why := badSubmoduleName(v.name); why != "" {
			bad("submodule name %q %s", v.name, why)
		}
		switch v.key {
		case "path":
			if strings.HasPrefix(v.value, "-") {
				bad("submodule %q: path %q starts with \"-\" and would be read as an option", v.name, v.value)
			} else if f := checkPath(v.value); f != nil {
				bad("submodule %q: path %q: %s", v.name, v.value, f.Detail)
			}
		case "url":
			if strings.HasPrefix(v.value, "-") {
				bad("submodule %q: url %q starts with \"-\" and would be read as an option", v.name, v.value)
			}
			if hasControlURL(v.value) {
				bad("submodule %q: url %q holds control characters, raw or percent-encoded", v.name, v.value)
			}
		case "update":
			if strings.HasPrefix(v.value, "!") {
				bad("submodule %q: update %q runs a command", v.name, v.value)
			}
		}
	}
	return sortFindings(out)
}

// badSubmoduleName says why git must not use a submodule name, or returns
// "". git stores a submodule under .git/modules/<name>, so a ".." component
// (with either separator) writes outside it.
func badSubmoduleName(name string) string {
	switch {
	case name == "":
		return "is empty"
	case strings.HasPrefix(name, "-"):
		return `starts with "-" and would be read as an option`
	}
	for _, c := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c == ".." {
			return `has a ".." component`
		}
	}
	return ""
}

// hasControlURL reports control characters in a URL, raw or
// percent-encoded: git's credential code decodes "%0a" into a newline.
func hasControlURL(u string) bool {
	if strings.IndexFunc(u, isControl) >= 0 {
		return true
	}
	for i := 0; i+2 < len(u); i++ {
		if b, err := hex.DecodeString(u[i+1 : i+3]); u[i] == '%' && err == nil && isControl(rune(b[0])) {
			return true
		}
	}
	return false
}

// configVar is one variable of a git config file.
type configVar struct {
	section string // lower case
	name    string // the subsection, as written
	named   bool   // whether the header had a subsection
	key     string // lower case
	value   string
}

// parseConfig reads the subset of git's config syntax that git itself
// writes, with git's rules for quotes, escapes, whitespace and comments.
func parseConfig(s string) ([]configVar, error) {
	s = strings.TrimPrefix(s, "\ufeff") // git skips a UTF-8 byte order mark
	var vars []configVar
	var cur *configVar
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimLeft(strings.TrimSuffix(line, "\r"), " \t")
		var err error
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			cur = &configVar{}
			err = parseHeader(line, cur)
		case cur == nil:
			err = errors.New("a variable outside any section")
		default:
			v := *cur
			err = parseVar(line, &v)
			vars = append(vars, v)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	return vars, nil
}

// parseHeader reads `[section]` or `[section "name"]`, then an optional
// comment.
func parseHeader(line string, v *configVar) error {
	i := 1
	for i < len(line) && (isAlnum(line[i]) || line[i] == '-') {
		i++
	}
	if i == 1 {
		return errors.New("a section header needs a name")
	}
	v.section = strings.ToLower(line[1:i])
	rest := strings.TrimLeft(line[i:], " \t")
	if len(rest) < len(line[i:]) {
		if !strings.HasPrefix(rest, `"`) {
			return errors.New(`a section name must be quoted: [section "name"]`)
		}
		var name strings.Builder
		j := 1
		for ; j < len(rest) && rest[j] != '"'; j++ {
			if rest[j] == '\\' && j+1 < len(rest) {
				j++ // git keeps the escaped character, whatever it is
			}
			name.WriteByte(rest[j])
		}
		if j == len(rest) {
			return errors.New("a section name's quote is not closed")
		}
		v.name, v.named, rest = name.String(), true, rest[j+1:]
	}
	rest, ok := strings.CutPrefix(rest, "]")
	if !ok {
		return errors.New(`a section header must be [section] or [section "name"]`)
	}
	if rest = strings.TrimLeft(rest, " \t"); rest != "" && rest[0] != '#' && rest[0] != ';' {
		return errors.New("text after a section header")
	}
	return nil
}

// parseVar reads `key`, `key = value` or `key = "value"`, with a comment.
func parseVar(line string, v *configVar) error {
	i := 0
	for i < len(line) && (isAlnum(line[i]) || (i > 0 && line[i] == '-')) {
		i++
	}
	if i == 0 || !isASCIILetter(line[0]) {
		return errors.New("a variable name must start with a letter")
	}
	v.key = strings.ToLower(line[:i])
	rest := strings.TrimLeft(line[i:], " \t")
	switch {
	case rest == "" || rest[0] == '#' || rest[0] == ';':
		return nil // a boolean true, with no value
	case rest[0] != '=':
		return fmt.Errorf("%q must be followed by \"=\"", v.key)
	}
	var b strings.Builder
	quote := false
	spaces := 0
	for j := 1; j < len(rest); j++ {
		c := rest[j]
		if !quote && (c == ' ' || c == '\t' || c == '\r') {
			if b.Len() > 0 {
				spaces++ // inner whitespace becomes spaces; trailing is dropped
			}
			continue
		}
		if !quote && (c == '#' || c == ';') {
			break
		}
		b.WriteString(strings.Repeat(" ", spaces))
		spaces = 0
		switch {
		case c == '"':
			quote = !quote
		case c != '\\':
			b.WriteByte(c)
		case j+1 == len(rest):
			return errors.New("a line continuation (write the value on one line)")
		default:
			j++
			e, ok := map[byte]byte{'t': '\t', 'b': '\b', 'n': '\n', '\\': '\\', '"': '"'}[rest[j]]
			if !ok {
				return fmt.Errorf("unknown escape \\%c", rest[j])
			}
			b.WriteByte(e)
		}
	}
	if quote {
		return errors.New("a value's quote is not closed")
	}
	v.value = b.String()
	return nil
}

func isAlnum(b byte) bool { return isASCIILetter(b) || b >= '0' && b <= '9' }
