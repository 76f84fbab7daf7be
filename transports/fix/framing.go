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
	fsBody            // skipping BodyLength bytes but the last
	fsSeek            // looking for "<SOH>10=" from the body's last byte on
	fsSumVal          // CheckSum's digits, up to SOH
)

// framer checks, as it passes, that a byte stream is a sequence of FIX
// messages no longer than max bytes each: "8=<BeginString><SOH>9=<BodyLength>
// <SOH>", BodyLength bytes, then "10=<CheckSum><SOH>". It finds the CheckSum
// as quickfix's reader does (the first "<SOH>10=" from the body's last byte
// on), so both agree on where every message ends; bytes before "8=" where a
// message must start, which quickfix would skip without bound, are refused.
// It keeps a fixed-size state and never buffers or copies the stream.
type framer struct {
	max    int   // Options.MaxMessageSize
	st     uint8 // fs*
	match  uint8 // bytes of "<SOH>10=" matched in fsSeek
	n      int   // bytes of the current message so far
	digits int   // digits (or value bytes) of the current field so far
	length int   // BodyLength's value
	remain int   // body bytes still to skip in fsBody
	off    int64 // bytes of the stream accepted before the current call
	msgs   int64 // complete messages
}

func newFramer(max int) *framer { return &framer{max: max} }

// scan checks p, the next bytes of the stream, and returns how many of them
// are valid; when that is less than len(p), err says what is wrong with the
// byte at p[n] (ErrMalformedStream or ErrMessageTooLarge) and the framer must
// not be used again.
func (f *framer) scan(p []byte) (n int, err error) {
	i := 0
	for i < len(p) {
		if f.st == fsBody { // the bulk of every message: skipped by count
			k := min(f.remain, len(p)-i)
			i += k
			f.n += k
			f.remain -= k
			if f.remain == 0 {
				f.st, f.match = fsSeek, 0
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
				// and at least "10=000<SOH>".
				if total := f.n + 1 + f.length + 7; total > f.max {
					return f.tooLarge(i, f.off+int64(i-f.n), fmt.Sprintf("its BodyLength (9=) %d makes it %d bytes", f.length, total))
				}
				f.st, f.remain = fsBody, f.length-1
				if f.remain == 0 {
					f.st, f.match = fsSeek, 0
				}
			default:
				return f.fail(i, b, "in BodyLength (9=), which must be a positive number")
			}
		case fsSeek:
			switch {
			case b == soh:
				f.match = 1
			case f.match == 1 && b == '1', f.match == 2 && b == '0':
				f.match++
			case f.match == 3 && b == '=':
				f.st, f.digits = fsSumVal, 0
			default:
				f.match = 0
			}
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
		if f.n > f.max {
			return f.tooLarge(i-1, f.off+int64(i-f.n), "no CheckSum (10=) ends it within that size")
		}
	}
	f.off += int64(len(p))
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
