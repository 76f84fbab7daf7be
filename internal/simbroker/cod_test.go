package simbroker

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/tag"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/venue"
)

// openCIDs lists the client order IDs of the broker's open orders.
func openCIDs(b *Broker) []string {
	var out []string
	for _, o := range b.OpenOrders() {
		out = append(out, o.ClientOrderID)
	}
	slices.Sort(out)
	return out
}

// cancelsBy returns the client order IDs cancelled with cause c, sorted.
func cancelsBy(l AuditLog, c CancelCause) []string {
	var out []string
	for _, x := range l.Cancels() {
		if x.Cause == c {
			out = append(out, x.ClientOrderID)
		}
	}
	slices.Sort(out)
	return out
}

// A FIX session's end applies the scope it chose at logon (or the broker's
// default), and a Logout with 9003=Y keeps every order: one case per venue
// rule. R is a resting order placed over REST, F one placed in the session.
func TestFIXCancelOnDisconnectScopes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		def       CODScope // broker default for FIX
		tag       int      // logon tag (0: none)
		val       string
		leave     string // drop | logout | logout-9003
		cancelled []string
		open      []string
		kept      bool
	}{
		{name: "off by default, drop", leave: "drop", open: []string{"F", "R"}},
		{name: "kraken default session, drop", def: CODSession, leave: "drop", cancelled: []string{"F"}, open: []string{"R"}},
		{name: "kraken 8674=1 opts out", def: CODSession, tag: TagKrakenCOD, val: "1", leave: "drop", open: []string{"F", "R"}},
		{name: "coinbase 8013=Y cancels the profile", tag: TagCoinbaseCOD, val: "Y", leave: "drop", cancelled: []string{"F", "R"}},
		{name: "coinbase 8013=S cancels the session", tag: TagCoinbaseCOD, val: "S", leave: "logout", cancelled: []string{"F"}, open: []string{"R"}},
		{name: "deribit 9001=Y, plain logout cancels", tag: TagDeribitCOD, val: "Y", leave: "logout", cancelled: []string{"F"}, open: []string{"R"}},
		{name: "deribit 9001=Y, logout 9003=Y keeps", tag: TagDeribitCOD, val: "Y", leave: "logout-9003", open: []string{"F", "R"}, kept: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, nil)
			if err := b.SetCancelOnDisconnect(FIX, tc.def); err != nil {
				t.Fatal(err)
			}
			hc := client(t, b, true, 5*time.Second)
			if r := mustDo(t, hc, http.MethodPost, b.Region("us").RESTURL()+"/v1/orders", b.APIKey(), limitOrder("R")); r.code != 201 {
				t.Fatalf("REST limit: %d %s", r.code, r.body)
			}
			seq := 1
			fc := dialFIX(t, b, "eu", &seq)
			fc.sendRaw("A", func(bd *quickfix.Body) {
				bd.SetInt(tag.EncryptMethod, 0)
				bd.SetInt(tag.HeartBtInt, 5)
				if tc.tag != 0 {
					bd.SetString(quickfix.Tag(tc.tag), tc.val)
				}
			}, false)
			if mt, _ := fc.next().MsgType(); mt != "A" {
				t.Fatalf("logon answered %s", mt)
			}
			fc.newOrder("F", "2", "1.05", false)
			if st := str(t, fc.next(), tag.OrdStatus); st != "0" {
				t.Fatalf("limit order status %q, want 0 (new, resting)", st)
			}
			switch tc.leave {
			case "drop":
				fc.close()
			case "logout":
				fc.logout()
			case "logout-9003":
				fc.sendRaw("5", func(bd *quickfix.Body) { bd.SetString(TagDontCancelOnDisconnect, "Y") }, false)
				fc.expectClosed()
			}
			waitFor(t, "the session's end to be audited", func() bool {
				return len(b.Audit().Filter(func(r Record) bool { return r.Kind == KindLogout })) == 1
			})
			a := b.Audit()
			if got := cancelsBy(a, CauseCOD); !slices.Equal(got, tc.cancelled) {
				t.Errorf("cancelled by COD %v, want %v", got, tc.cancelled)
			}
			if got := openCIDs(b); !slices.Equal(got, tc.open) {
				t.Errorf("open %v, want %v", got, tc.open)
			}
			for _, c := range a.Cancels() {
				if c.ConnID != "eu/fix/1" {
					t.Errorf("cancel %+v does not name the session's connection eu/fix/1", c)
				}
			}
			kept := a.Filter(func(r Record) bool { return r.Kind == KindCODKept })
			if (len(kept) == 1) != tc.kept {
				t.Errorf("cod-kept records %+v, want kept=%v", kept, tc.kept)
			}
		})
	}
}

// OrderCancelRequest cancels a resting order; the audit names the client as
// the cause, and a cancel of an unknown order is rejected.
func TestFIXOrderCancelRequest(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	seq := 1
	fc := dialFIX(t, b, "eu", &seq)
	fc.logon(false)
	fc.newOrder("L1", "2", "1.05", false)
	fc.next()
	cancel := func(orig string) *quickfix.Message {
		fc.sendRaw("F", func(bd *quickfix.Body) {
			bd.SetString(tag.OrigClOrdID, orig)
			bd.SetString(tag.ClOrdID, "c-"+orig)
			bd.SetString(tag.Side, "1")
			bd.SetField(tag.TransactTime, quickfix.FIXUTCTimestamp{Time: time.Now().UTC()})
		}, false)
		return fc.next()
	}
	m := cancel("L1")
	if et, st := str(t, m, tag.ExecType), str(t, m, tag.OrdStatus); et != "4" || st != "4" {
		t.Fatalf("cancel answered ExecType %q OrdStatus %q, want 4/4: %s", et, st, m)
	}
	if m := cancel("nope"); str(t, m, tag.OrdStatus) != "8" {
		t.Fatalf("cancel of unknown order answered %s", m)
	}
	if got := cancelsBy(b.Audit(), CauseUser); !slices.Equal(got, []string{"L1"}) {
		t.Fatalf("user cancels %v", got)
	}
	fc.logout()
}

// bubbleBroker starts a broker on an in-memory network inside a synctest
// bubble and returns it with an HTTP client and a WebSocket dialer.
func bubbleBroker(t *testing.T) (*Broker, *http.Client, *websocket.Dialer) {
	t.Helper()
	n := faultnet.NewMemNetwork(1, 100*time.Microsecond)
	cfg := testConfig()
	cfg.PlainHTTP = true
	cfg.Listen = func(region string, svc Service) (net.Listener, error) {
		return n.Listen(fmt.Sprintf("%s.%s.sim:80", region, svc))
	}
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DialContext: n.Dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b, &http.Client{Transport: tr}, &websocket.Dialer{NetDialContext: n.Dial}
}

func wsAsk(t *testing.T, c *websocket.Conn, v any) wsOrderReply {
	t.Helper()
	if err := c.WriteJSON(v); err != nil {
		t.Fatalf("ws write: %v", err)
	}
	var r wsOrderReply
	if err := c.ReadJSON(&r); err != nil {
		t.Fatalf("ws read: %v", err)
	}
	return r
}

// WebSocket order entry: with cancel-on-disconnect on, a dropped connection
// cancels its own orders only (Deribit: "does not affect orders created by
// other connections"); a graceful logout keeps them.
func TestWSCancelOnDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, hc, d := bubbleBroker(t)
		eu := b.Region("eu")
		if r := mustDo(t, hc, http.MethodPost, eu.RESTURL()+"/v1/orders", b.APIKey(), limitOrder("R")); r.code != 201 {
			t.Fatalf("REST limit: %d %s", r.code, r.body)
		}
		dial := func() *websocket.Conn {
			c, _, err := d.Dial(eu.WSURL(), http.Header{"X-API-Key": {b.APIKey()}})
			if err != nil {
				t.Fatalf("ws dial: %v", err)
			}
			return c
		}
		order := func(c *websocket.Conn, id string) {
			r := wsAsk(t, c, map[string]any{"type": "order", "client_order_id": id, "symbol": "EURUSD", "side": "buy",
				"qty": "1", "order_type": "limit", "price": "1.01"})
			if r.Type != "order" || r.Order == nil || !r.Order.Open() {
				t.Fatalf("ws order %s answered %+v", id, r)
			}
		}
		dropped := dial()
		if r := wsAsk(t, dropped, map[string]any{"type": "enable_cancel_on_disconnect"}); r.Type != "cod" || r.Scope != "connection" {
			t.Fatalf("enable COD answered %+v", r)
		}
		order(dropped, "W1")
		graceful := dial()
		wsAsk(t, graceful, map[string]any{"type": "enable_cancel_on_disconnect", "scope": "connection"})
		order(graceful, "W2")
		_ = dropped.Close()
		if err := graceful.WriteJSON(map[string]any{"type": "logout"}); err != nil {
			t.Fatal(err)
		}
		_, _, _ = graceful.ReadMessage() // the server closes after a logout
		_ = graceful.Close()
		synctest.Wait()
		a := b.Audit()
		if got := cancelsBy(a, CauseCOD); !slices.Equal(got, []string{"W1"}) {
			t.Errorf("cancelled by COD %v, want [W1]", got)
		}
		if got := openCIDs(b); !slices.Equal(got, []string{"R", "W2"}) {
			t.Errorf("open %v, want [R W2]", got)
		}
		if kept := a.Filter(func(r Record) bool { return r.Kind == KindCODKept }); len(kept) != 1 {
			t.Errorf("cod-kept %+v, want one (the logout)", kept)
		}
	})
}

func TestSetCancelOnDisconnectRefusesREST(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _, _ := bubbleBroker(t)
		if err := b.SetCancelOnDisconnect(REST, CODProfile); err == nil {
			t.Fatal("REST cancel-on-disconnect accepted")
		}
		if err := b.SetCancelOnDisconnect(WS, CODProfile+1); err == nil {
			t.Fatal("unknown scope accepted")
		}
	})
}

// The shipped profiles map to the broker's scopes as their facts say.
func TestCODForShippedProfiles(t *testing.T) {
	for _, tc := range []struct {
		p           venue.Profile
		def, scoped CODScope
	}{
		{venue.KrakenSpot(), CODSession, CODSession},
		{venue.CoinbaseExchangeFIX(), CODOff, CODProfile},
		{venue.Deribit(), CODOff, CODConnection},
		{venue.Alpaca(), CODOff, CODOff},
	} {
		if got := CODFor(tc.p); got != tc.def {
			t.Errorf("CODFor(%s) = %v, want %v", tc.p.Name, got, tc.def)
		}
		if got := CODScopeOf(tc.p); got != tc.scoped {
			t.Errorf("CODScopeOf(%s) = %v, want %v", tc.p.Name, got, tc.scoped)
		}
	}
}
