package ws

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// FuzzDecompressedReadLimit: any permessage-deflate payload, read through the
// decompressor and the read limit as Conn.NextReader does, yields at most
// limit bytes. A payload that decompresses to more is an error wrapping
// websocket.ErrReadLimit, after exactly its first limit bytes, and every later
// read returns it again; one that does not reads exactly as the decompressor
// alone does (same bytes, same error).
//
//	go test -run '^$' -fuzz '^FuzzDecompressedReadLimit$' -fuzztime 60s ./transports/ws/
func FuzzDecompressedReadLimit(f *testing.F) {
	deflate := func(b []byte) []byte {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.BestCompression)
		_, _ = w.Write(b)
		_ = w.Flush() // as permessage-deflate: a sync flush, no final block
		return buf.Bytes()
	}
	f.Add(deflate([]byte(`{"type":"tick","stream":"px","seq":1}`)), uint16(1024))
	f.Add(deflate(make([]byte, 1<<20)), uint16(4096)) // a bomb: 1 MiB from ~1 KiB
	f.Add(deflate(make([]byte, 4096)), uint16(4096))  // exactly the limit
	f.Add(deflate(make([]byte, 4097)), uint16(4096))  // one byte over
	f.Add([]byte{0x00, 0x00, 0xff, 0xff}, uint16(0))  // an empty message
	f.Add([]byte("not deflate at all"), uint16(100))  // corrupt
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		n := int64(limit)
		ref, refErr := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(data)), n+1))
		var failed *error
		calls := 0
		br := &boundedReader{
			r: flate.NewReader(bytes.NewReader(data)), left: n,
			sticky: func() *error { return failed },
			fail: func() error {
				calls++
				e := websocket.ErrReadLimit
				failed = &e
				return e
			},
		}
		got, err := io.ReadAll(br)
		if int64(len(got)) > n {
			t.Fatalf("read %d bytes past a limit of %d", len(got), n)
		}
		if int64(len(ref)) > n {
			if !errors.Is(err, websocket.ErrReadLimit) || calls != 1 {
				t.Fatalf("a payload of more than %d bytes read as %d bytes, %v (%d failures)", n, len(got), err, calls)
			}
			if !bytes.Equal(got, ref[:n]) {
				t.Fatalf("the first %d bytes differ from the decompressor's", n)
			}
			if k, err := br.Read(make([]byte, 8)); k != 0 || !errors.Is(err, websocket.ErrReadLimit) {
				t.Fatalf("read after the limit: %d, %v", k, err)
			}
			return
		}
		if calls != 0 || !bytes.Equal(got, ref) || (err == nil) != (refErr == nil) || (err != nil && err.Error() != refErr.Error()) {
			t.Fatalf("within the limit: %d bytes, %v (%d failures); the decompressor gives %d bytes, %v", len(got), err, calls, len(ref), refErr)
		}
	})
}

// Server-sent text is described by its length, never shown.
func TestRedactShowsLengthNotContent(t *testing.T) {
	if got := redact("token abc"); strings.Contains(got, "abc") || !strings.Contains(got, "9 bytes") {
		t.Errorf("redact = %q", got)
	}
}
