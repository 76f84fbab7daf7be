package rest

import (
	"strings"
	"testing"
	"unicode"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// validDetail: bounded, one line, no control characters (the broker's text
// is quoted, escaped and cut).
func validDetail(t *testing.T, d string) {
	t.Helper()
	if len(d) > 512 {
		t.Fatalf("Detail is %d bytes: %.80q…", len(d), d)
	}
	if strings.IndexFunc(d, unicode.IsControl) >= 0 {
		t.Fatalf("Detail carries a control character: %q", d)
	}
}

// FuzzReconcileAnswer: whatever a lookup answers (status and body), the
// order gets a settlement for itself with a known fate, never a panic.
func FuzzReconcileAnswer(f *testing.F) {
	f.Add(200, []byte(`{"client_order_id":"o-1","status":"filled"}`), false)
	f.Add(200, []byte(`{"clientOrderId":"o-1","status":"NEW"}`), true)
	f.Add(400, []byte(`{"code":-2013,"msg":"Order does not exist."}`), true)
	f.Add(404, []byte(``), false)
	f.Add(200, []byte(`{"client_order_id":"o-2","status":"filled"}`), false)
	f.Add(200, []byte(`{"client_order_id":"o-1","status":"x\n2024 INFO order ACCEPTED"}`), false)
	f.Add(200, []byte(`{"status":{"a":[1,2]},"client_order_id":1}`), false)
	f.Add(200, []byte(`[1,2,3]`), false)
	f.Add(503, []byte(`service unavailable`), false)
	alpaca, err := NewReconciler(AlpacaOrderLookup("https://broker.example"))
	if err != nil {
		f.Fatal(err)
	}
	binance, err := NewReconciler(BinanceSpotOrderLookup("https://broker.example", "BTCUSDT"))
	if err != nil {
		f.Fatal(err)
	}
	fates := map[pathdialer.Fate]bool{pathdialer.FateUndetermined: true, pathdialer.FateNotReceived: true,
		pathdialer.FateResting: true, pathdialer.FateFilled: true, pathdialer.FateCanceled: true, pathdialer.FateRejected: true}
	f.Fuzz(func(t *testing.T, status int, body []byte, useBinance bool) {
		r := alpaca
		if useBinance {
			r = binance
		}
		in := pathdialer.Settlement{OrderID: "o-1", Service: "rest", Fate: pathdialer.FateUndetermined}
		s := r.settle(in, status, body)
		if s.OrderID != "o-1" || s.Service != "rest" {
			t.Fatalf("settlement for %q/%q, want o-1/rest", s.OrderID, s.Service)
		}
		if !fates[s.Fate] {
			t.Fatalf("fate %v is not a fate", s.Fate)
		}
		if s.Fate != pathdialer.FateUndetermined && s.Fate != pathdialer.FateNotReceived && status != 200 {
			t.Fatalf("HTTP %d settled as %v", status, s.Fate)
		}
		validDetail(t, s.Detail)
	})
}

// FuzzIdentityAnswer: whatever an account query answers, an identity with an
// account or an error, never a panic.
func FuzzIdentityAnswer(f *testing.F) {
	f.Add([]byte(`{"account_id":"ACC-1","entity":"EU Ltd","entitlements":["trade","read"]}`))
	f.Add([]byte(`{"account_id":42}`))
	f.Add([]byte(`{"account_id":"","entitlements":"trade"}`))
	f.Add([]byte(`{"account_id":{"nested":true},"entitlements":[1,{}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`"ACC-1"`))
	opts := IdentityOptions{AccountField: "account_id", EntityField: "entity", EntitlementsField: "entitlements"}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, err := decodeIdentity(opts, body)
		if err == nil && id.Account == "" {
			t.Fatalf("identity without account and no error: %+v", id)
		}
		if err != nil && (id.Account != "" || id.Entity != "" || id.Entitlements != nil) {
			t.Fatalf("an error with a partial identity: %+v, %v", id, err)
		}
	})
}
