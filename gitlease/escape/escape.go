// Package escape makes text that an agent controls safe to print on a
// terminal: its output, the names of the files it wrote, the messages it
// left. A terminal acts on what it is sent: ESC sequences set the window
// title, write the clipboard (OSC 52) or move the cursor over lines already
// printed; C1 controls do the same in one character (U+009B is CSI, and
// the byte 0x9b is CSI to a terminal that reads Latin-1); bidirectional
// controls make a line read in another order than it is written. So every
// such character is replaced by a visible escape, and ordinary text,
// non-ASCII included, is kept as it is.
//
// Escapes: \n, \t and \r for LF, TAB and CR; \xHH for the other C0
// controls, DEL and each byte that is not valid UTF-8; \uHHHH for C1
// controls and bidirectional controls, isolates and marks (U+061C,
// U+200E, U+200F, U+202A-U+202E, U+2066-U+2069).
//
// Text (logs, patches) keeps LF and TAB and never escapes a backslash:
// logs and patches are full of code whose "\n" must read as written, so a
// literal "\x1b" there may be the agent's own four characters (the stored
// bytes, with logs --raw, say which). Line (one-line fields: paths,
// reasons, messages) escapes LF and TAB too, and doubles a backslash
// where it could otherwise start an escape, so that a field reads one way
// only.
package escape

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// IsControl reports the runes that are escaped: C0 controls (a caller may
// keep LF and TAB), DEL, C1 controls and bidirectional controls.
func IsControl(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Text escapes multi-line text, keeping LF and TAB.
func Text(b []byte) []byte { return appendEscaped(nil, b, true) }

// Line escapes a one-line field, LF and TAB included.
func Line(s string) string { return string(appendEscaped(nil, []byte(s), false)) }

// appendEscaped is the escaper; keepLines says whether src is Text.
func appendEscaped(dst, src []byte, keepLines bool) []byte {
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = fmt.Appendf(dst, `\x%02x`, src[i])
		case keepLines && (r == '\n' || r == '\t'):
			dst = append(dst, src[i])
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r <= 0x7f && IsControl(r):
			dst = fmt.Appendf(dst, `\x%02x`, r)
		case IsControl(r):
			dst = fmt.Appendf(dst, `\u%04x`, r)
		case r == '\\' && !keepLines && readsAsEscape(src[i+1:]):
			dst = append(dst, `\\`...)
		default:
			dst = append(dst, src[i:i+size]...)
		}
		i += size
	}
	return dst
}

// readsAsEscape reports whether a backslash followed by b could be read
// as one of the escapes above (or as an escaped backslash).
func readsAsEscape(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	r, size := utf8.DecodeRune(b)
	return strings.ContainsRune(`\ntrxu`, r) || IsControl(r) || r == utf8.RuneError && size == 1
}

// Writer escapes text written to it in pieces, as output is followed while
// an agent writes it: a UTF-8 sequence split between two writes is held
// until its end arrives. Close writes what is still held.
type Writer struct {
	w    io.Writer
	held []byte
}

// NewWriter returns a Writer that writes Text(what it is given) to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

func (e *Writer) Write(p []byte) (int, error) {
	b := append(e.held, p...)
	whole := len(b) - incompleteTail(b)
	_, err := e.w.Write(appendEscaped(nil, b[:whole], true))
	e.held = append([]byte(nil), b[whole:]...)
	return len(p), err
}

// Close escapes what is held (an incomplete sequence: invalid bytes).
func (e *Writer) Close() error {
	if len(e.held) == 0 {
		return nil
	}
	_, err := e.w.Write(appendEscaped(nil, e.held, true))
	e.held = nil
	return err
}

// incompleteTail is how many bytes at the end of b begin a UTF-8 sequence
// that more bytes could complete.
func incompleteTail(b []byte) int {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		if utf8.RuneStart(b[len(b)-k]) {
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}

// JSON escapes, in encoded JSON, what encoding/json leaves raw: DEL, C1
// and bidirectional controls, as \uXXXX. They occur only inside strings
// (encoding/json already escapes C0 controls there, so a LF left is
// indentation), and the escape decodes to the same rune.
func JSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r >= 0x7f && IsControl(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
