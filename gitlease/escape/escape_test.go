package escape

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTextAndLine(t *testing.T) {
	for _, c := range []struct{ name, in, text, line string }{
		{"plain non-ASCII is kept", "héllo 日本 ✓", "héllo 日本 ✓", "héllo 日本 ✓"},
		{"ESC", "a\x1b[2Jb", `a\x1b[2Jb`, `a\x1b[2Jb`},
		{"OSC 52 clipboard write", "\x1b]52;c;cm0gLXJmIH4=\x07", `\x1b]52;c;cm0gLXJmIH4=\x07`, `\x1b]52;c;cm0gLXJmIH4=\x07`},
		{"title", "\x1b]0;pwned\x1b\\", `\x1b]0;pwned\x1b\`, `\x1b]0;pwned\x1b\`},
		{"CSI as C1 U+009B", "\u009b31mred", `\u009b31mred`, `\u009b31mred`},
		{"other C1", "\u0085\u0090\u009d", `\u0085\u0090\u009d`, `\u0085\u0090\u009d`},
		{"raw byte 0x9b is invalid UTF-8", "\x9b31m", `\x9b31m`, `\x9b31m`},
		{"RLO", "evil\u202etxt.sh", `evil\u202etxt.sh`, `evil\u202etxt.sh`},
		{"bidi isolates and marks", "\u2066\u2069\u200e\u200f\u061c\u202a", `\u2066\u2069\u200e\u200f\u061c\u202a`, `\u2066\u2069\u200e\u200f\u061c\u202a`},
		{"invalid UTF-8", "a\xff\xc3b", `a\xff\xc3b`, `a\xff\xc3b`},
		{"DEL and NUL", "\x7f\x00", `\x7f\x00`, `\x7f\x00`},
		{"LF and TAB", "a\tb\nc", "a\tb\nc", `a\tb\nc`},
		{"CR", "ok\rrm -rf /", `ok\rrm -rf /`, `ok\rrm -rf /`},
		{"U+FFFD itself is text", "\ufffd", "\ufffd", "\ufffd"},
		{"a backslash in code", `printf("%s\n", x)`, `printf("%s\n", x)`, `printf("%s\\n", x)`},
		{"a backslash that starts nothing", `C:\Users`, `C:\Users`, `C:\Users`},
		{"a literal escape", `\x1b`, `\x1b`, `\\x1b`},
		{"backslashes", `a\\b\`, `a\\b\`, `a\\\b\`},
		{"a backslash before an escaped character", "\\\x1b", `\\x1b`, `\\\x1b`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(Text([]byte(c.in))); got != c.text {
				t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
			}
			if got := Line(c.in); got != c.line {
				t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
			}
			for _, got := range []string{string(Text([]byte(c.in))), Line(c.in)} {
				if unsafe := strings.IndexFunc(got, IsControl); unsafe >= 0 && got[unsafe] != '\n' && got[unsafe] != '\t' {
					t.Errorf("%q still holds %q", got, got[unsafe:])
				}
			}
		})
	}
}

// TestLineReadsOneWay decodes what Line wrote and gets the input back:
// two different fields never print the same.
func TestLineReadsOneWay(t *testing.T) {
	for _, in := range []string{`\x1b`, "\x1b", `\\x1b`, "\\\x1b", `\`, `\\`, `a\nb`, "a\nb", `\u202e`, "\u202e", "\xff", `\xff`, `\q`} {
		if got := unescapeLine(t, Line(in)); got != in {
			t.Errorf("Line(%q) = %q reads back as %q", in, Line(in), got)
		}
	}
}

// unescapeLine reads Line's escapes: \\, \n, \t, \r, \xHH, \uHHHH; any
// other backslash is itself.
func unescapeLine(t *testing.T, s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b = append(b, s[i])
			continue
		}
		switch s[i+1] {
		case '\\', 'n', 't', 'r':
			b = append(b, map[byte]byte{'\\': '\\', 'n': '\n', 't': '\t', 'r': '\r'}[s[i+1]])
			i++
		case 'x':
			v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, byte(v))
			i += 3
		case 'u':
			v, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			b = utf8.AppendRune(b, rune(v))
			i += 5
		default:
			b = append(b, s[i])
		}
	}
	return string(b)
}

func TestWriterHoldsASplitSequence(t *testing.T) {
	in := "日本\u202e\x1b[0m\xffend"
	for cut := range len(in) + 1 {
		var out bytes.Buffer
		w := NewWriter(&out)
		w.Write([]byte(in[:cut]))
		w.Write([]byte(in[cut:]))
		w.Close()
		if want := string(Text([]byte(in))); out.String() != want {
			t.Errorf("cut at %d: %q, want %q", cut, out.String(), want)
		}
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("ab\xe6\x97"))
	w.Close()
	if out.String() != `ab\xe6\x97` {
		t.Errorf("an incomplete sequence at the end: %q", out.String())
	}
}

func TestJSONStaysJSONAndGetsNoControls(t *testing.T) {
	in := map[string]string{"message": "\u009b2J\u202eevil\x7f\x1b日本\n"}
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	safe := JSON(b)
	var back map[string]string
	if err := json.Unmarshal(safe, &back); err != nil {
		t.Fatalf("not JSON any more: %v\n%s", err, safe)
	}
	if back["message"] != in["message"] {
		t.Errorf("decodes as %q, want %q", back["message"], in["message"])
	}
	if i := bytes.IndexFunc(safe, func(r rune) bool { return IsControl(r) && r != '\n' }); i >= 0 {
		t.Errorf("%q still holds %q", safe, safe[i:])
	}
	if !bytes.Contains(safe, []byte("日本")) {
		t.Errorf("non-ASCII text was escaped: %s", safe)
	}
}
