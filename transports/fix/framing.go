package fix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxMessageSize is Options.MaxMessageSize when it is left zero: 1 MiB,
// far above any session or order message, and a bound on what one
// counterparty message may cost.
const DefaultMaxMessageSize = 1 << 20

// Bounds of Options.MaxMessageSize.
const (
	minMaxMessageSize = 4 << 10
	maxMaxMessageSize = 256 << 20
)

// maxBeginStringLen bounds BeginString's value ("FIX.4.4", "FIXT.1.1").
const maxBeginStringLen = 16

// framer states: where in a message the next byte is.
const (
	fsStart    = iota // expecting '8' of "8=" (a message starts)
	fsBeginEq         // expecting '=' of "8="
	fsBeginVal        // BeginString's value, up to SOH
	fsLenTag          // expecting '9' of "9="
	fsLenEq           // expecting '=' of "9="
	fsLenVal          // BodyLength's digits, up to SOH
	fsBody            // the body's fields, BodyLength bytes
	fsSumTag1         // expecting '1' of "10="
	fsSumTag0         // expecting '0' of "10="
	fsSumEq           // expecting '=' of "10="
	fsSumVal          // CheckSum's digits, up to SOH
)

// Where in a body field the next byte is (in fsBody).
const (
	fldTag     = iota // the tag, up to '='
	fldVal            // the value, up to SOH
	fldXMLTag         // the tag of the field after XmlDataLen, up to '='
	fldXMLData        // its XmlDataLen bytes of data
	fldXMLEnd         // the SOH after them
)

// tagXMLDataLen is XmlDataLen (212): quickfix reads that many bytes as the
// value of the next field, whatever they contain.
const tagXMLDataLen = 212

// fixInt accumulates a FIX integer exactly as quickfix's parser reads one
// (an optional '-', decimal digits, wrapping on overflow), so the framer
// agrees with quickfix on every tag and XmlDataLen it reads.
type fixInt struct {
	n      int
	digits int
	neg    bool
	bad    bool
}

func (v *fixInt) add(b byte) {
	switch {
	case b >= '0' && b <= '9':
		v.n = v.n*10 + int(b-'0')
		v.digits++
	case b == '-' && v.digits == 0 && !v.neg:
		v.neg = true
	default:
		v.bad = true
	}
}

// value returns the integer and whether quickfix reads one.
func (v *fixInt) value() (int, bool) {
	if v.bad || v.digits == 0 {
		return 0, false
	}
	if v.neg {
		return -v.n, true
	}
	return v.n, true
}

// framer checks, as it passes, that a byte stream is a sequence of FIX
// messages no longer than max bytes each: "8=<BeginString><SOH>9=<BodyLength>
// <SOH>", BodyLength bytes of fields, each ending with SOH, then
// "10=<CheckSum><SOH>". Every message it lets through is one quickfix's reader
// frames the same way. In the body it reads the tags (and the value of
// XmlDataLen, 212, whose data field quickfix's parser reads by length, and
// would read past the message's end): an XmlData field must end within the
// body, and a message carries at most one XmlDataLen. Bytes before "8=" where
// a message must start, which quickfix would skip without bound, are refused.
// It keeps a fixed-size state and never buffers or copies the stream.
type framer struct {
	max    int   // Options.MaxMessageSize
	st     uint8 // fs*
	fld    uint8 // fld*, in fsBody
	last   byte  // the previous byte of the body
	xml    bool  // the message has an XmlDataLen
	n      int   // bytes of the current message so far
	digits int   // digits (or value bytes) of the current field so far
	length int   // BodyLength's value
	remain int   // body bytes still to come in fsBody
	xmlLen int   // XmlDataLen's value; in fldXMLData, data bytes still to come
	tag    fixInt
	val    fixInt // the value of an XmlDataLen field
	off    int64  // bytes of the stream accepted before the current call
	msgs   int64  // complete messages
}

func newFramer(max int) *framer { return &framer{max: max} }

// scan checks p, the next bytes of the stream, and returns how many of them
// are valid; when that is less than len(p), err says what is wrong with the
// byte at p[n] (ErrMalformedStream or ErrMessageTooLarge) and the framer must
// not be used again.
func (f *framer) scan(p []byte) (n int, err error) {
	i := 0
	for i < len(p) {
		if f.st == fsBody {
			k, err := f.body(p[i:min(i+f.remain, len(p))])
			if err != nil {
				return f.fail(i+k, p[i+k], err.Error())
			}
			i += k
			f.n += k
			f.remain -= k
			if f.remain == 0 {
				if f.fld != fldTag || f.digits != 0 || f.last != soh {
					if f.fld == fldXMLTag || f.fld == fldXMLData || f.fld == fldXMLEnd {
						return f.fail(i-1, p[i-1], "where the XmlData field after XmlDataLen (212) runs past BodyLength (9=)")
					}
					return f.fail(i-1, p[i-1], "where BodyLength (9=) ends the body in the middle of a field")
				}
				f.st = fsSumTag1
			}
			continue
		}
		b := p[i]
		switch f.st {
		case fsStart:
			if b != '8' {
				return f.fail(i, b, `where a message must start with "8=" (BeginString)`)
			}
			f.n = 0
			f.st = fsBeginEq
		case fsBeginEq:
			if b != '=' {
				return f.fail(i, b, `where a message must start with "8=" (BeginString)`)
			}
			f.st, f.digits = fsBeginVal, 0
		case fsBeginVal:
			switch {
			case b == soh && f.digits > 0:
				f.st = fsLenTag
			case b == soh || f.digits == maxBeginStringLen:
				return f.fail(i, b, fmt.Sprintf("in BeginString (8=), which must be 1 to %d bytes", maxBeginStringLen))
			default:
				f.digits++
			}
		case fsLenTag:
			if b != '9' {
				return f.fail(i, b, `where BodyLength ("9=") must follow BeginString`)
			}
			f.st = fsLenEq
		case fsLenEq:
			if b != '=' {
				return f.fail(i, b, `where BodyLength ("9=") must follow BeginString`)
			}
			f.st, f.digits, f.length = fsLenVal, 0, 0
		case fsLenVal:
			switch {
			case b >= '0' && b <= '9':
				f.digits++
				f.length = f.length*10 + int(b-'0')
				if f.length > f.max {
					return f.tooLarge(i, f.off+int64(i-f.n), fmt.Sprintf("its BodyLength (9=) is above %d", f.max))
				}
			case b == soh && f.length > 0:
				// The whole message: what came so far, this SOH, the body
				// and "10=nnn<SOH>".
				if total := f.n + 1 + f.length + 7; total > f.max {
					return f.tooLarge(i, f.off+int64(i-f.n), fmt.Sprintf("its BodyLength (9=) %d makes it %d bytes", f.length, total))
				}
				f.st, f.remain = fsBody, f.length
				f.fld, f.digits, f.last, f.xml = fldTag, 0, 0, false
				f.tag = fixInt{}
			default:
				return f.fail(i, b, "in BodyLength (9=), which must be a positive number")
			}
		case fsSumTag1, fsSumTag0, fsSumEq:
			if b != "10="[f.st-fsSumTag1] {
				return f.fail(i, b, `where CheckSum ("10=") must follow the BodyLength (9=) bytes of the body`)
			}
			f.st++
			f.digits = 0
		case fsSumVal:
			switch {
			case b >= '0' && b <= '9' && f.digits < 3:
				f.digits++
			case b == soh && f.digits > 0:
				f.st = fsStart
				f.msgs++
			default:
				return f.fail(i, b, "in CheckSum (10=), which must be 3 digits")
			}
		}
		i++
		f.n++
		if f.n > f.max { // a safety net: the checks above keep every message within max
			return f.tooLarge(i-1, f.off+int64(i-f.n), "it does not end within that size")
		}
	}
	f.off += int64(len(p))
	return len(p), nil
}

// body reads p, bytes of the current message's body, field by field (every
// field has a value; an XmlData field runs as long as XmlDataLen says). It
// returns how many bytes are valid and, at the first that is not, why.
func (f *framer) body(p []byte) (int, error) {
	for i := 0; i < len(p); {
		switch f.fld {
		case fldTag:
			b := p[i]
			i++
			f.last = b
			switch b {
			case '=':
				if f.digits == 0 { // quickfix reads an empty tag's first byte: a panic
					return i - 1, errors.New("where a field's tag must be")
				}
				f.fld, f.digits = fldVal, 0
				f.val = fixInt{}
			case soh: // a field without '=': quickfix refuses the message, harmlessly
				f.digits = 0
				f.tag = fixInt{}
			default:
				f.digits++
				f.tag.add(b)
			}
		case fldVal:
			if f.digits == 0 && p[i] == soh {
				// quickfix's parser and its integer reads index an empty
				// value's first byte: a panic, in its session goroutine.
				return i, errors.New("where a field's value must be (the FIX protocol has no empty values)")
			}
			if t, ok := f.tag.value(); !ok || t != tagXMLDataLen {
				j := bytes.IndexByte(p[i:], soh)
				if j < 0 {
					f.digits = 1
					f.last = p[len(p)-1]
					return len(p), nil
				}
				i += j + 1
				f.last = soh
				f.fld, f.digits = fldTag, 0
				f.tag = fixInt{}
				continue
			}
			b := p[i]
			if b != soh {
				f.val.add(b)
				f.digits = 1
				f.last = b
				i++
				continue
			}
			if f.xml {
				return i, errors.New("where a second XmlDataLen (212) ends")
			}
			f.xml = true
			f.last = soh
			i++
			f.fld, f.digits = fldTag, 0
			f.tag = fixInt{}
			if v, ok := f.val.value(); ok && v > 0 {
				f.xmlLen = v
				f.fld = fldXMLTag
			}
		case fldXMLTag:
			b := p[i]
			i++
			f.last = b
			if b == '=' && f.digits == 0 {
				return i - 1, errors.New("where the tag of the XmlData field after XmlDataLen (212) must be")
			}
			f.digits++
			if b == '=' {
				// The data and its SOH must fit in what is left of the body.
				if f.xmlLen < 0 || f.xmlLen >= f.remain-i {
					return i - 1, errors.New("where the XmlData field after XmlDataLen (212) runs past BodyLength (9=)")
				}
				f.fld = fldXMLData
			}
		case fldXMLData:
			k := min(f.xmlLen, len(p)-i)
			i += k
			f.xmlLen -= k
			f.last = p[i-1]
			if f.xmlLen == 0 {
				f.fld = fldXMLEnd
			}
		case fldXMLEnd:
			if p[i] != soh {
				return i, errors.New("where the XmlData field after XmlDataLen (212) must end with SOH")
			}
			i++
			f.last = soh
			f.fld, f.digits = fldTag, 0
			f.tag = fixInt{}
		}
	}
	return len(p), nil
}

// fail reports a byte that cannot be where it is. The byte is quoted, never
// the counterparty's text around it.
func (f *framer) fail(i int, b byte, where string) (int, error) {
	return i, fmt.Errorf("%w: byte %q at offset %d of the stream (after %d complete messages) %s",
		ErrMalformedStream, rune(b), f.off+int64(i), f.msgs, where)
}

// tooLarge reports the message starting at offset start of the stream as
// longer than f.max; the first i bytes of the current call are valid.
func (f *framer) tooLarge(i int, start int64, why string) (int, error) {
	return i, fmt.Errorf("%w (%d bytes): the message at offset %d of the stream (after %d complete messages) is larger: %s",
		ErrMessageTooLarge, f.max, start, f.msgs, why)
}

// copyFramed copies src to dst as io.Copy does, through one buffer, checking
// with f that src is a stream of FIX messages. At the first violation it
// writes the valid bytes before it and returns the framer's error
// (ErrMalformedStream or ErrMessageTooLarge). A clean EOF returns nil.
func copyFramed(dst io.Writer, src io.Reader, f *framer) error {
	buf := make([]byte, 32<<10)
	for {
		nr, rerr := src.Read(buf)
		if nr > 0 {
			ok, ferr := f.scan(buf[:nr])
			if ok > 0 {
				nw, werr := dst.Write(buf[:ok])
				if werr != nil {
					return werr
				}
				if nw != ok {
					return io.ErrShortWrite
				}
			}
			if ferr != nil {
				return ferr
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
