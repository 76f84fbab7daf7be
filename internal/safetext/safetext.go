// Package safetext bounds and escapes text that comes from outside the
// process (a broker's answers, a counterparty's FIX Text, a server's error
// body) before it reaches events, errors, logs, status pages or metrics.
//
// Text is made safe in two ways. Control characters (C0, DEL, C1), the
// Unicode line and paragraph separators, the bidirectional overrides and
// invalid UTF-8 are escaped as Go escapes (\n, \x1b, \u2028), so one value
// renders on one line and cannot forge another log line. Text longer than
// the bound is cut, on a rune boundary, and ends with a note of its original
// length: "…(1048576 bytes)".
package safetext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds, in bytes, the length note included.
const (
	// Max bounds one piece of counterparty text where the library reads it
	// (a FIX Text, a status field).
	Max = 256
	// DetailMax bounds a text kept per order (a settlement's detail, a
	// ticket's cause): the library's words around pieces bounded by Max.
	DetailMax = 512
	// FieldMax bounds one text field of an event, an error or a Snapshot (a
	// cause, an error's text): the library's explanation may quote several
	// pieces.
	FieldMax = 2048
	// LogMax bounds one log message or string attribute: it holds a whole
	// event line made of fields bounded by FieldMax.
	LogMax = 8192
)

// Bound returns s escaped and cut to at most Max bytes (see the package
// documentation). Text that needs neither is returned as it is.
func Bound(s string) string { return BoundN(s, Max) }

// Safe reports whether Bound would return s as it is.
func Safe(s string) bool { return SafeN(s, Max) }

// SafeN reports whether BoundN(s, n) would return s as it is.
func SafeN(s string, n int) bool { return len(s) <= max(n, 32) && clean(s) }

// BoundN is Bound with a bound of n bytes (n below 32 is taken as 32).
func BoundN(s string, n int) string {
	n = max(n, 32)
	if len(s) <= n && clean(s) {
		return s
	}
	note := "…(" + strconv.Itoa(len(s)) + " bytes)"
	var b strings.Builder
	b.Grow(min(len(s), n) + 8)
	keep := 0 // the longest escaped prefix that leaves room for the note
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case unsafeRune(r):
			q := strconv.QuoteRune(r) // '\n', '\x1b', '\u2028'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
		if b.Len() > n {
			return b.String()[:keep] + note
		}
		if b.Len() <= n-len(note) {
			keep = b.Len()
		}
	}
	return b.String()
}

const hex = "0123456789abcdef"

// clean reports whether s holds nothing to escape.
func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

// unsafeRune: runes that break a line or reorder what a reader sees.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true // bidirectional controls
	}
	return false
}

// Error returns err unchanged when its text is already safe, else an error
// whose Error is BoundN(err.Error(), n) and that unwraps to err (errors.Is
// and errors.As see through it). Nil stays nil.
func Error(err error, n int) error {
	if err == nil {
		return nil
	}
	s := err.Error()
	if SafeN(s, n) {
		return err
	}
	return &boundedError{err: err, text: BoundN(s, n)}
}

type boundedError struct {
	err  error
	text string
}

func (e *boundedError) Error() string { return e.text }
func (e *boundedError) Unwrap() error { return e.err }
