package rest

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// scanOrderID must agree with decoding wherever it claims to know the answer.
func FuzzScanOrderIDAgreesWithDecoding(f *testing.F) {
	for _, s := range []string{
		`{"client_order_id":"a1","qty":1}`,
		` { "qty" : [1,{"client_order_id":"nested"}], "clientOrderId":"b2" } `,
		`{"newClientOrderId":"c3","client_order_id":""}`,
		`{"client_order_id":"x","client_order_id":"y"}`,
		`{"client_order_id":12}`,
		`{"client_order_id":"esc\"aped"}`,
		`{"note":"a\"b,}","client_order_id":"z"}`,
		`{}`, `[]`, `{"client_order_id":"a"`, `{"a":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		start, end, ok := scanOrderID(b)
		got := string(b[start:end])
		if !ok || !json.Valid(b) { // on malformed JSON the broker refuses the body itself
			return
		}
		var v struct {
			A string `json:"client_order_id"`
			B string `json:"clientOrderId"`
			C string `json:"newClientOrderId"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("scan accepted %q (id %q) but it does not decode: %v", b, got, err)
		}
		want := v.A
		if want == "" {
			want = v.B
		}
		if want == "" {
			want = v.C
		}
		if got != want {
			t.Fatalf("scan of %q = %q, decoding says %q", b, got, want)
		}
	})
}

// The in-memory fast path reads only what the reader would still send, leaves
// it unread, and never hands out an ID that shares memory the caller may
// change (a byte slice); with the readers' fields unavailable it copies.
func TestScanInMemoryReadsTheUnreadPartInPlace(t *testing.T) {
	for _, inPlace := range []bool{true, false} {
		sOK, bOK, nOK := stringsReaderOK, bytesReaderOK, nopCloserInPlace
		stringsReaderOK, bytesReaderOK, nopCloserInPlace = inPlace, inPlace, inPlace
		t.Cleanup(func() { stringsReaderOK, bytesReaderOK, nopCloserInPlace = sOK, bOK, nOK })

		const prefix = `{"client_order_id":"skipped"}`
		const body = prefix + `{"client_order_id":"o-7","qty":"1"}`
		sr := strings.NewReader(body)
		if _, err := sr.Seek(int64(len(prefix)), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		id, ok := scanInMemory(io.NopCloser(sr))
		if !ok || id != "o-7" {
			t.Fatalf("inPlace=%v: strings.Reader: scanInMemory = %q, %v; want the unread body's o-7", inPlace, id, ok)
		}
		if rest, _ := io.ReadAll(sr); string(rest) != body[len(prefix):] {
			t.Fatalf("inPlace=%v: the scan consumed the body: left %q", inPlace, rest)
		}

		buf := []byte(body)
		br := bytes.NewReader(buf)
		if _, err := br.Seek(int64(len(prefix)), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		id, ok = scanInMemory(io.NopCloser(br))
		if !ok || id != "o-7" {
			t.Fatalf("inPlace=%v: bytes.Reader: scanInMemory = %q, %v; want o-7", inPlace, id, ok)
		}
		copy(buf[len(prefix)+len(`{"client_order_id":"`):], "XX")
		if id != "o-7" {
			t.Fatalf("inPlace=%v: the ID shares the caller's byte slice: now %q", inPlace, id)
		}
		if br.Len() != len(body)-len(prefix) {
			t.Fatalf("inPlace=%v: the scan moved the bytes.Reader (%d left)", inPlace, br.Len())
		}
	}
}

// The standard library's readers and io.NopCloser still have the fields the
// fast path reads (if this fails, the fast path silently copies or goes
// through reflect: correct, but slower).
func TestReaderFieldsAsExpected(t *testing.T) {
	if !stringsReaderOK || !bytesReaderOK || !nopCloserInPlace {
		t.Fatalf("as expected: strings.Reader's fields %v, bytes.Reader's %v, io.NopCloser's %v", stringsReaderOK, bytesReaderOK, nopCloserInPlace)
	}
}
