package simbroker

import (
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// A WebSocket session may ask for a profile-wide cancel-on-disconnect
// (Coinbase's 8013=Y over a session): its drop cancels every open order of
// the account, REST's included.
func TestWSCancelOnDisconnectProfile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, hc, d := bubbleBroker(t)
		eu := b.Region("eu")
		if r := mustDo(t, hc, http.MethodPost, eu.RESTURL()+"/v1/orders", b.APIKey(), limitOrder("R")); r.code != 201 {
			t.Fatalf("REST limit: %d %s", r.code, r.body)
		}
		c, _, err := d.Dial(eu.WSURL(), http.Header{"X-API-Key": {b.APIKey()}})
		if err != nil {
			t.Fatalf("ws dial: %v", err)
		}
		if r := wsAsk(t, c, map[string]any{"type": "enable_cancel_on_disconnect", "scope": "profile"}); r.Type != "cod" || r.Scope != "profile" {
			t.Fatalf("enable COD profile answered %+v", r)
		}
		_ = c.Close()
		time.Sleep(time.Second) // virtual: the server notices the close
		synctest.Wait()
		if got := cancelsBy(b.Audit(), CauseCOD); !slices.Equal(got, []string{"R"}) {
			t.Errorf("cancelled by COD %v, want [R] (the REST order: profile-wide)", got)
		}
	})
}
