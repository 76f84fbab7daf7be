package fix

import (
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
			if i, err = f.scanBody(p, i); err != nil {
				return i, err
			}
			continue
		}
		if f.st <= fsLenVal {
			err = f.header(i, p[i])
		} else {
			err = f.trailer(i, p[i])
		}
		if err != nil {
			return i, err
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

// scanBody reads the body bytes of p from p[i] on, up to the body's end,
// and returns the index after them; at the body's end the last field must
// be complete. On error it returns scan's results.
func (f *framer) scanBody(p []byte, i int) (int, error) {
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
	return i, nil
}

// header reads b, the byte at p[i], in "8=<BeginString><SOH>9=<BodyLength>
// <SOH>", and says why when b cannot be there.
func (f *framer) header(i int, b byte) error {
	switch f.st {
	case fsStart:
		if b != '8' {
			return f.malformed(i, b, `where a message must start with "8=" (BeginString)`)
		}
		f.n = 0
		f.st = fsBeginEq
	case fsBeginEq:
		if b != '=' {
			return f.malformed(i, b, `where a message must start with "8=" (BeginString)`)
		}
		f.st, f.digits = fsBeginVal, 0
	case fsBeginVal:
		switch {
		case b == soh && f.digits > 0:
			f.st = fsLenTag
		case b == soh || f.digits == maxBeginStringLen:
			return f.malformed(i, b, fmt.Sprintf("in BeginString (8=), which must be 1 to %d bytes", maxBeginStringLen))
		default:
			f.digits++
		}
	case fsLenTag:
		if b != '9' {
			return f.malformed(i, b, `where BodyLength ("9=") must follow BeginString`)
		}
		f.st = fsLenEq
	case fsLenEq:
		if b != '=' {
			return f.malformed(i, b, `where BodyLength ("9=") must follow BeginString`)
		}
		f.st, f.digits, f.length = fsLenVal, 0, 0
	case fsLenVal:
		return f.bodyLength(i, b)
	}
	return nil
}

// bodyLength reads b, the byte at p[i], in BodyLength's value: a digit, or
// the SOH that ends it, where the whole message must fit in f.max.
func (f *framer) bodyLength(i int, b byte) error {
	switch {
	case b >= '0' && b <= '9':
		f.digits++
		f.length = f.length*10 + int(b-'0')
		if f.length > f.max {
			_, err := f.tooLarge(i, f.off+int64(i-f.n), fmt.Sprintf("its BodyLength (9=) is above %d", f.max))
			return err
		}
	case b == soh && f.length > 0:
		// The whole message: what came so far, this SOH, the body
		// and "10=nnn<SOH>".
		if total := f.n + 1 + f.length + 7; total > f.max {
			_, err := f.tooLarge(i, f.off+int64(i-f.n), fmt.Sprintf("its BodyLength (9=) %d makes it %d bytes", f.length, total))
			return err
		}
		f.st, f.remain = fsBody, f.length
		f.fld, f.digits, f.last, f.xml = fldTag, 0, 0, false
		f.tag = fixInt{}
	default:
		return f.malformed(i, b, "in BodyLength (9=), which must be a positive number")
	}
	return nil
}

// trailer reads b, the byte at p[i], in "10=<CheckSum><SOH>" (the SOH ends
// the message), and says why when b cannot be there.
func (f *framer) trailer(i int, b byte) error {
	switch f.st {
	case fsSumTag1, fsSumTag0, fsSumEq:
		if b != "10="[f.st-fsSumTag1] {
			return f.malformed(i, b, `where CheckSum ("10=") must follow the BodyLength (9=) bytes of the body`)
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
			return f.malformed(i, b, "in CheckSum (10=), which must be 3 digits")
		}
	}
	return nil
}

// fail reports a byte that cannot be where it is (malformed), and that the
// first i bytes of the current call are valid.
func (f *framer) fail(i int, b byte, where string) (int, error) {
	return i, f.malformed(i, b, where)
}

// malformed says why the byte b at p[i] cannot be where it is. The byte is
// quoted, never the counterparty's text around it.
func (f *framer) malformed(i int, b byte, where string) error {
	return fmt.Errorf("%w: byte %q at offset %d of the stream (after %d complete messages) %s",
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
