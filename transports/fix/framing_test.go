package fix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/quickfixgo/quickfix"
)

// realMessages are messages built by quickfix itself (its BodyLength and
// CheckSum), as a counterparty running it sends them.
func realMessages() [][]byte {
	mk := func(begin, msgType string, body ...[2]string) []byte {
		m := quickfix.NewMessage()
		m.Header.SetString(8, begin)
		m.Header.SetString(35, msgType)
		m.Header.SetString(49, "BROKER")
		m.Header.SetString(56, "CLIENT")
		m.Header.SetInt(34, 7)
		m.Header.SetString(52, "20260101-12:00:00.000")
		for _, f := range body {
			var tag int
			_, _ = fmt.Sscan(f[0], &tag)
			m.Body.SetString(quickfix.Tag(tag), f[1])
		}
		return []byte(m.String())
	}
	return [][]byte{
		mk("FIX.4.4", "A", [2]string{"98", "0"}, [2]string{"108", "30"}),
		mk("FIX.4.4", "0"),
		mk("FIX.4.2", "8", [2]string{"37", "O-1"}, [2]string{"17", "E-1"}, [2]string{"11", "ord-1"},
			[2]string{"20", "0"}, [2]string{"39", "2"}, [2]string{"150", "2"}, [2]string{"55", "EURUSD"}, [2]string{"54", "1"}),
		mk("FIX.4.4", "5", [2]string{"58", "MsgSeqNum too low, expecting 12 but received 3"}),
		// RawData (96) may hold SOH and "10=": only BodyLength frames it.
		mk("FIX.4.4", "A", [2]string{"98", "0"}, [2]string{"108", "30"}, [2]string{"95", "9"}, [2]string{"96", "a\x0110=1\x01b"}),
		mk("FIXT.1.1", "A", [2]string{"98", "0"}, [2]string{"108", "30"}, [2]string{"1137", "9"}),
		// XmlData (213) holds any bytes, its length in XmlDataLen (212).
		mk("FIX.4.4", "n", [2]string{"212", "9"}, [2]string{"213", "<a>\x01=</a>"}),
	}
}

func TestFramerPassesRealMessagesInAnyChunks(t *testing.T) {
	stream := bytes.Join(realMessages(), nil)
	for _, r := range []struct {
		name string
		r    func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"halves", iotest.HalfReader},
	} {
		var out bytes.Buffer
		f := newFramer(DefaultMaxMessageSize)
		if err := copyFramed(&out, r.r(bytes.NewReader(stream)), f); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if !bytes.Equal(out.Bytes(), stream) {
			t.Fatalf("%s: copied %q, want %q", r.name, out.Bytes(), stream)
		}
		if f.msgs != int64(len(realMessages())) {
			t.Fatalf("%s: framed %d messages, want %d", r.name, f.msgs, len(realMessages()))
		}
	}
}

func TestFramerRefuses(t *testing.T) {
	ok := string(realMessages()[1])
	for _, tc := range []struct {
		name, in string
		max      int
		valid    int // bytes accepted before the error
		want     error
	}{
		{"leading garbage", "x" + ok, 4096, 0, ErrMalformedStream},
		{"newline between messages", ok + "\n" + ok, 4096, len(ok), ErrMalformedStream},
		{"no BodyLength", "8=FIX.4.4\x0135=0\x01", 4096, 10, ErrMalformedStream},
		{"empty BeginString", "8=\x019=5\x01", 4096, 2, ErrMalformedStream},
		{"long BeginString", "8=FIX.4.4.4.4.4.4.4.4\x01", 4096, 18, ErrMalformedStream},
		{"BodyLength zero", "8=FIX.4.4\x019=0\x01", 4096, 13, ErrMalformedStream},
		{"BodyLength not a number", "8=FIX.4.4\x019=1a\x01", 4096, 13, ErrMalformedStream},
		{"CheckSum not digits", "8=FIX.4.4\x019=5\x0135=0\x0110=1x3\x01", 4096, 23, ErrMalformedStream},
		{"CheckSum too long", "8=FIX.4.4\x019=5\x0135=0\x0110=1234\x01", 4096, 25, ErrMalformedStream},
		{"BodyLength above max", "8=FIX.4.4\x019=5000\x01", 4096, 15, ErrMessageTooLarge},
		{"BodyLength just above max with the header", "8=FIX.4.4\x019=4073\x01", 4096, 16, ErrMessageTooLarge},
		{"no CheckSum after the body", "8=FIX.4.4\x019=5\x0135=0\x01" + string(bytes.Repeat([]byte("A"), 5000)), 4096, 19, ErrMalformedStream},
		{"BodyLength ends mid-field", "8=FIX.4.4\x019=4\x0135=0\x0110=000\x01", 4096, 17, ErrMalformedStream},
		{"BodyLength too long", "8=FIX.4.4\x019=6\x0135=0\x0110=000\x01", 4096, 19, ErrMalformedStream},
		{"XmlDataLen last in the body", "8=FIX.4.4\x019=12\x0135=A\x01212=99\x0110=000\x01", 4096, 26, ErrMalformedStream},
		{"XmlData past the body", withBody("35=A\x01212=99\x01213=x\x01"), 4096, strings.Index(withBody("35=A\x01212=99\x01213=x\x01"), "213=") + 3, ErrMalformedStream},
		{"XmlData not ended by SOH", withBody("35=A\x01212=2\x01213=abc\x01"), 4096, strings.Index(withBody("35=A\x01212=2\x01213=abc\x01"), "c\x01"), ErrMalformedStream},
		{"empty value", withBody("35=0\x0134=\x01"), 4096, strings.Index(withBody("35=0\x0134=\x01"), "34=") + 3, ErrMalformedStream},
		{"empty BodyLength in the body", withBody("35=000000\x019=\x01"), 4096, strings.Index(withBody("35=000000\x019=\x01"), "\x019=\x01") + 3, ErrMalformedStream},
		{"empty tag", withBody("35=0\x01=5\x01"), 4096, strings.Index(withBody("35=0\x01=5\x01"), "\x01=5") + 1, ErrMalformedStream},
		{"empty XmlData tag", withBody("35=0\x01212=1\x01=5\x01"), 4096, strings.Index(withBody("35=0\x01212=1\x01=5\x01"), "\x01=5") + 1, ErrMalformedStream},
		{"two XmlDataLen", withBody("35=A\x01212=1\x01213=x\x01212=1\x01213=y\x01"), 4096, strings.LastIndex(withBody("35=A\x01212=1\x01213=x\x01212=1\x01213=y\x01"), "212=1") + 5, ErrMalformedStream},
		{"XmlDataLen wrapping to 212 as a tag", withBody("35=A\x0118446744073709551828=99\x01"), 4096, strings.Index(withBody("35=A\x0118446744073709551828=99\x01"), "99\x01") + 2, ErrMalformedStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := newFramer(tc.max).scan([]byte(tc.in))
			if !errors.Is(err, tc.want) || n != tc.valid {
				t.Fatalf("scan = %d, %v; want %d, %v", n, err, tc.valid, tc.want)
			}
			if len(err.Error()) > 300 {
				t.Fatalf("error of %d bytes: %q", len(err.Error()), err)
			}
		})
	}
	// The largest message that fits is accepted.
	body := "35=0\x0158=" + string(bytes.Repeat([]byte("x"), 4096-len("8=FIX.4.4\x019=4074\x01")-7-len("35=0\x0158=")-1)) + "\x01"
	msg := fmt.Sprintf("8=FIX.4.4\x019=%d\x01%s10=000\x01", len(body), body)
	if len(msg) != 4096 {
		t.Fatalf("test message is %d bytes", len(msg))
	}
	if n, err := newFramer(4096).scan([]byte(msg)); err != nil || n != len(msg) {
		t.Fatalf("a message of exactly MaxMessageSize: %d, %v", n, err)
	}
}

// withBody returns a FIX.4.4 message with body, its BodyLength and CheckSum.
func withBody(body string) string { return string(message("FIX.4.4", []byte(body))) }

// wellFormed builds a FIX message whose body carries data (any bytes) in an
// XmlData field, with BodyLength and CheckSum as a counterparty computes them.
func wellFormed(begin string, data []byte) []byte {
	if len(data) == 0 { // FIX has no empty values
		return message(begin, []byte("35=B\x0158=-\x01"))
	}
	body := fmt.Appendf(nil, "35=B\x01212=%d\x01213=", len(data))
	body = append(append(body, data...), soh)
	return message(begin, body)
}

// message frames body as a FIX message.
func message(begin string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "8=%s\x019=%d\x01", begin, len(body))
	b.Write(body)
	sum := 0
	for _, c := range b.Bytes() {
		sum += int(c)
	}
	fmt.Fprintf(&b, "10=%03d\x01", sum%256)
	return b.Bytes()
}

// FuzzRelayFraming: for any input the framer does not panic, agrees with
// itself however the input is chunked, accepts a prefix and refuses the rest
// with a short error wrapping its sentinel, and keeps a fixed-size state; and a
// stream of well-formed messages (carrying the input in a field) passes
// through copyFramed byte-identical.
func FuzzRelayFraming(f *testing.F) {
	for _, m := range realMessages() {
		f.Add(m, uint8(0))
		f.Add(m, uint8(3))
	}
	f.Add(bytes.Join(realMessages(), nil), uint8(17))
	f.Add([]byte("8=FIX.4.4\x01AAAAAAAA"), uint8(1))
	f.Add([]byte("8=FIX.4.4\x019=99999999\x0135=0\x01"), uint8(2))
	f.Add([]byte("8=FIX.4.4\x019=5\x0135=0\x01AAAA\x0110=12"), uint8(5))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"), uint8(0))
	f.Add([]byte("8=FIX.4.4\x019=12\x0135=A\x01212=99\x0110=000\x01"), uint8(4))
	f.Add([]byte(withBody("35=A\x01212=3\x01213=a\x01b\x01")), uint8(4))
	f.Add([]byte(withBody("35=0\x0134=\x01")), uint8(4))
	f.Add([]byte("35=000000\x019=\x01"), uint8(4))
	f.Add([]byte("35=0\x01=5\x01"), uint8(4))
	const max = minMaxMessageSize
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		// Any input, whole and in chunks.
		one := newFramer(max)
		n1, err1 := one.scan(data)
		if n1 < 0 || n1 > len(data) || (err1 == nil) != (n1 == len(data)) {
			t.Fatalf("scan = %d, %v for %d bytes", n1, err1, len(data))
		}
		if err1 != nil {
			if !errors.Is(err1, ErrMalformedStream) && !errors.Is(err1, ErrMessageTooLarge) {
				t.Fatalf("error wraps no sentinel: %v", err1)
			}
			if len(err1.Error()) > 300 {
				t.Fatalf("error of %d bytes", len(err1.Error()))
			}
		}
		step := int(chunk)%64 + 1
		chunked := newFramer(max)
		n2 := 0
		var err2 error
		for i := 0; i < len(data) && err2 == nil; i += step {
			var k int
			k, err2 = chunked.scan(data[i:min(i+step, len(data))])
			n2 += k
		}
		if n2 != n1 || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("whole: %d, %v; in chunks of %d: %d, %v", n1, err1, step, n2, err2)
		}

		// Every message it lets through, quickfix's parser reads without
		// panicking.
		framed := newFramer(max)
		from := 0
		for i := range n1 {
			if _, err := framed.scan(data[i : i+1]); err != nil {
				t.Fatalf("byte %d refused alone: %v", i, err)
			}
			if framed.msgs > 0 {
				mustParse(t, data[from:i+1])
				framed.msgs, from = 0, i+1
			}
		}

		// The input as the body of a correctly framed message: if the framer
		// lets it through, quickfix's parser must not panic on it.
		if len(data) > 0 && len(data) < max-64 {
			msg := message("FIX.4.4", data)
			if k, err := newFramer(max).scan(msg); err == nil {
				mustParse(t, msg)
			} else if k >= len(msg) {
				t.Fatalf("refused past the end: %d of %d", k, len(msg))
			}
		}

		// Well-formed messages carrying the input pass through unchanged.
		if len(data) > max-64 {
			data = data[:max-64]
		}
		stream := append(wellFormed("FIX.4.4", data), wellFormed("FIXT.1.1", data[:len(data)/2])...)
		var out bytes.Buffer
		fr := newFramer(max)
		if err := copyFramed(&out, iotest.HalfReader(bytes.NewReader(stream)), fr); err != nil {
			t.Fatalf("well-formed stream refused: %v", err)
		}
		if !bytes.Equal(out.Bytes(), stream) || fr.msgs != 2 {
			t.Fatalf("well-formed stream changed (%d messages framed)", fr.msgs)
		}
		mustParse(t, stream[:len(stream)-len(wellFormed("FIXT.1.1", data[:len(data)/2]))])
		// Scanning valid bytes allocates nothing: memory stays fixed.
		if a := testing.AllocsPerRun(1, func() { _, _ = newFramerValue(max).scan(stream) }); a != 0 {
			t.Fatalf("scan of a well-formed stream allocated %v times", a)
		}
	})
}

// mustParse fails the test if quickfix's parser, or a read of the fields its
// session reads, panics on msg.
func mustParse(t *testing.T, msg []byte) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("quickfix panicked on a message the framer let through: %v\n%q", p, msg)
		}
	}()
	m := quickfix.NewMessage()
	if quickfix.ParseMessage(m, bytes.NewBuffer(msg)) != nil {
		return
	}
	for _, tag := range []quickfix.Tag{9, 34, 7, 16, 36, 45, 108, 383} { // lengths, sequence numbers, HeartBtInt
		_, _ = m.Header.GetInt(tag)
		_, _ = m.Body.GetInt(tag)
	}
	for _, tag := range []quickfix.Tag{43, 97, 123, 141} { // PossDup, PossResend, GapFill, ResetSeqNum
		_, _ = m.Header.GetBool(tag)
		_, _ = m.Body.GetBool(tag)
	}
	_, _ = m.Header.GetTime(52)
	_, _ = m.Header.GetTime(122)
}

// newFramerValue is newFramer without the heap allocation, for counting the
// allocations of scan alone.
func newFramerValue(max int) *framer {
	var f framer
	f.max = max
	return &f
}

// BenchmarkCopyFramed compares the relay's framed copy with a plain copy of
// the same stream of real messages, and with quickfix's parsing of them.
func BenchmarkCopyFramed(b *testing.B) {
	stream := bytes.Repeat(bytes.Join(realMessages(), nil), 64)
	b.Run("framed", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			if err := copyFramed(io.Discard, bytes.NewReader(stream), newFramer(DefaultMaxMessageSize)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("quickfix.ParseMessage", func(b *testing.B) { // what quickfix spends on the same messages anyway
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		msgs := realMessages()
		for b.Loop() {
			for range 64 {
				for _, m := range msgs {
					_ = quickfix.ParseMessage(quickfix.NewMessage(), bytes.NewBuffer(m))
				}
			}
		}
	})
	b.Run("io.Copy", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		buf := make([]byte, 32<<10)
		for b.Loop() {
			_, _ = io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{bytes.NewReader(stream)}, buf)
		}
	})
}
