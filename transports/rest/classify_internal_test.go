package rest

import (
	"encoding/json"
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
		got, ok := scanOrderID(b)
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
