package fix

import (
	"bytes"
	"errors"
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

// body reads p, bytes of the current message's body, field by field (every
// field has a value; an XmlData field runs as long as XmlDataLen says). It
// returns how many bytes are valid and, at the first that is not, why.
func (f *framer) body(p []byte) (int, error) {
	for i := 0; i < len(p); {
		var err error
		switch f.fld {
		case fldTag:
			i, err = f.fieldTag(p, i)
		case fldVal:
			i, err = f.fieldValue(p, i)
		case fldXMLTag:
			i, err = f.xmlTag(p, i)
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
		if err != nil {
			return i, err
		}
	}
	return len(p), nil
}

// fieldTag reads p[i], a byte of a field's tag or the '=' after it, and
// returns the index of the next byte (of the byte in error, with err).
func (f *framer) fieldTag(p []byte, i int) (int, error) {
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
	return i, nil
}

// fieldValue reads a field's value from p[i] on: any field's up to its SOH
// at once, XmlDataLen's byte by byte (its value says how long the next
// field's data is). It returns the index of the next byte to read (of the
// byte in error, with err).
func (f *framer) fieldValue(p []byte, i int) (int, error) {
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
		f.last = soh
		f.fld, f.digits = fldTag, 0
		f.tag = fixInt{}
		return i + j + 1, nil
	}
	b := p[i]
	if b != soh {
		f.val.add(b)
		f.digits = 1
		f.last = b
		return i + 1, nil
	}
	if f.xml {
		return i, errors.New("where a second XmlDataLen (212) ends")
	}
	f.xml = true
	f.last = soh
	f.fld, f.digits = fldTag, 0
	f.tag = fixInt{}
	if v, ok := f.val.value(); ok && v > 0 {
		f.xmlLen = v
		f.fld = fldXMLTag
	}
	return i + 1, nil
}

// xmlTag reads p[i], a byte of the tag of the field after XmlDataLen, whose
// data (and its SOH) must fit in what is left of the body. It returns the
// index of the next byte (of the byte in error, with err).
func (f *framer) xmlTag(p []byte, i int) (int, error) {
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
	return i, nil
}
