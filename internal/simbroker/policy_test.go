package simbroker

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/tag"
)

// doTok is do with an optional fencing token header.
func doTok(t *testing.T, c *http.Client, method, url, key, token string, body any) resp {
	t.Helper()
	buf, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", key)
	if token != "" {
		req.Header.Set(TokenHeader, token)
	}
	r, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer r.Body.Close()
	out := resp{code: r.StatusCode, header: r.Header, proto: r.ProtoMajor}
	if out.body, err = io.ReadAll(r.Body); err != nil {
		t.Fatal(err)
	}
	return out
}

func errBody(t *testing.T, r resp) (msg, code string) {
	t.Helper()
	var e struct{ Error, Code string }
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("decode error body %s: %v", r.body, err)
	}
	return e.Error, e.Code
}

func TestPolicyParseAndValidate(t *testing.T) {
	for _, p := range []DedupPolicy{DedupAcrossRegions, DedupOpenOnly, DedupNone} {
		if got, err := ParseDedupPolicy(p.String()); err != nil || got != p {
			t.Errorf("ParseDedupPolicy(%q) = %v, %v", p, got, err)
		}
	}
	for _, p := range []FencePolicy{FenceNone, FenceEnforced} {
		if got, err := ParseFencePolicy(p.String()); err != nil || got != p {
			t.Errorf("ParseFencePolicy(%q) = %v, %v", p, got, err)
		}
	}
	for _, p := range []TokenPolicy{TokensOff, TokensChecked} {
		if got, err := ParseTokenPolicy(p.String()); err != nil || got != p {
			t.Errorf("ParseTokenPolicy(%q) = %v, %v", p, got, err)
		}
	}
	for _, bad := range []func() error{
		func() error { _, err := ParseDedupPolicy("sometimes"); return err },
		func() error { _, err := ParseFencePolicy("maybe"); return err },
		func() error { _, err := ParseTokenPolicy("lax"); return err },
		func() error { c := DefaultConfig(); c.Dedup = 7; return c.Validate() },
		func() error { c := DefaultConfig(); c.Fence = 7; return c.Validate() },
		func() error { c := DefaultConfig(); c.Tokens = 7; return c.Validate() },
	} {
		if err := bad(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("got %v, want ErrInvalidConfig", err)
		}
	}
	c := DefaultConfig()
	if c.Dedup != DedupAcrossRegions || c.Fence != FenceNone || c.Tokens != TokensOff {
		t.Fatalf("defaults changed: %s", c.Policies())
	}
	if got := c.Policies(); got != "dedup=across-regions fence=none tokens=off session=concurrent" {
		t.Fatalf("Policies() = %q", got)
	}
	if tk := parseToken("0"); tk.raw != "" || !tk.present || tk.value != 0 {
		t.Fatalf("token 0 = %+v, want a valid token", tk)
	}
	if tk := parseToken("-1"); tk.raw == "" || !tk.present {
		t.Fatalf("token -1 accepted: %+v", tk)
	}
	if tk := parseToken(" 42 "); tk.value != 42 || tk.raw != "" {
		t.Fatalf("token 42 = %+v", tk)
	}
}

func TestDedupPoliciesREST(t *testing.T) {
	t.Parallel()
	type step struct {
		id, kind   string // kind: limit | market | cancel
		region     string
		wantCode   int
		wantBooked int // bookings of id after the step
	}
	cases := []struct {
		policy DedupPolicy
		steps  []step
		dups   int
	}{
		{DedupAcrossRegions, []step{
			{"L", "limit", "eu", 201, 1}, {"L", "limit", "us", 200, 1}, {"L", "cancel", "eu", 200, 1}, {"L", "limit", "us", 200, 1},
			{"M", "market", "eu", 201, 1}, {"M", "market", "us", 200, 1},
		}, 0},
		{DedupOpenOnly, []step{
			{"L", "limit", "eu", 201, 1}, {"L", "limit", "us", 200, 1}, {"L", "cancel", "eu", 200, 1}, {"L", "limit", "us", 201, 2},
			{"M", "market", "eu", 201, 1}, {"M", "market", "us", 201, 2},
		}, 2},
		{DedupNone, []step{
			{"L", "limit", "eu", 201, 1}, {"L", "limit", "us", 201, 2}, {"L", "cancel", "eu", 200, 2}, {"L", "limit", "us", 201, 3},
			{"M", "market", "eu", 201, 1}, {"M", "market", "eu", 201, 2},
		}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.policy.String(), func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, func(c *Config) { c.Dedup = tc.policy })
			c := client(t, b, true, 5*time.Second)
			for i, s := range tc.steps {
				url := b.Region(s.region).RESTURL()
				var r resp
				switch s.kind {
				case "cancel":
					r = mustDo(t, c, http.MethodDelete, url+"/v1/orders/"+s.id, b.APIKey(), nil)
				case "limit":
					r = mustDo(t, c, http.MethodPost, url+"/v1/orders", b.APIKey(), limitOrder(s.id))
				default:
					r = mustDo(t, c, http.MethodPost, url+"/v1/orders", b.APIKey(), marketOrder(s.id))
				}
				if r.code != s.wantCode {
					t.Fatalf("step %d %+v: code %d (%s), want %d", i, s, r.code, r.body, s.wantCode)
				}
				if n := len(b.Bookings(s.id)); n != s.wantBooked {
					t.Fatalf("step %d %+v: %d bookings, want %d", i, s, n, s.wantBooked)
				}
			}
			log := b.Audit()
			if d := log.Duplicates(); len(d) != tc.dups {
				t.Fatalf("Duplicates() = %v, want %d", d, tc.dups)
			}
			// Every booked record names its own order; every duplicate names an existing one.
			seen := map[string]bool{}
			for _, r := range log.Orders() {
				switch r.Outcome {
				case OutcomeNew:
					if r.OrderID == "" || seen[r.OrderID] {
						t.Fatalf("booked record %+v: OrderID missing or reused", r)
					}
					seen[r.OrderID] = true
				case OutcomeDuplicate:
					if !seen[r.OrderID] {
						t.Fatalf("duplicate record %+v names no earlier booking", r)
					}
				}
			}
			// GET answers the latest booking.
			bk := b.Bookings("L")
			got := mustDo(t, c, http.MethodGet, b.Region("eu").RESTURL()+"/v1/orders/L", b.APIKey(), nil).order(t)
			if got.OrderID != bk[len(bk)-1].OrderID {
				t.Fatalf("GET L = %s, want latest booking %s", got.OrderID, bk[len(bk)-1].OrderID)
			}
		})
	}
}

func TestFenceEnforcedREST(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.Fence = FenceEnforced })
	c := client(t, b, true, 5*time.Second)
	eu, us := b.Region("eu").RESTURL(), b.Region("us").RESTURL()

	mustCode := func(r resp, want int) {
		t.Helper()
		if r.code != want {
			t.Fatalf("code %d (%s), want %d", r.code, r.body, want)
		}
	}
	mustCode(mustDo(t, c, http.MethodPost, eu+"/v1/orders", b.APIKey(), limitOrder("before")), 201)
	// The kill switch needs the key, and names a real region.
	mustCode(mustDo(t, c, http.MethodPost, us+"/v1/account/fence", "", map[string]string{"region": "eu"}), 401)
	r := mustDo(t, c, http.MethodPost, us+"/v1/account/fence", b.APIKey(), map[string]string{"region": "mars"})
	if _, code := errBody(t, r); r.code != 400 || code != "unknown_region" {
		t.Fatalf("fence mars: %d %s", r.code, r.body)
	}
	// Fence eu through us (the old region may be unreachable).
	mustCode(mustDo(t, c, http.MethodPost, us+"/v1/account/fence", b.APIKey(), map[string]string{"region": "eu"}), 200)
	if _, ok := b.FencedRegions()["eu"]; !ok {
		t.Fatalf("FencedRegions() = %v", b.FencedRegions())
	}
	r = mustDo(t, c, http.MethodPost, eu+"/v1/orders", b.APIKey(), limitOrder("during"))
	msg, code := errBody(t, r)
	if r.code != http.StatusForbidden || code != "region_fenced" || !strings.Contains(msg, "region eu is fenced") || !strings.Contains(msg, "nothing booked") {
		t.Fatalf("order on fenced eu: %d %s", r.code, r.body)
	}
	if _, ok := b.Order("during"); ok {
		t.Fatal("order on a fenced region was booked")
	}
	r = mustDo(t, c, http.MethodDelete, eu+"/v1/orders/before", b.APIKey(), nil)
	if _, code := errBody(t, r); r.code != http.StatusForbidden || code != "region_fenced" {
		t.Fatalf("cancel on fenced eu: %d %s", r.code, r.body)
	}
	mustCode(mustDo(t, c, http.MethodGet, eu+"/v1/orders/before", b.APIKey(), nil), 200) // reads still work
	mustCode(mustDo(t, c, http.MethodGet, eu+"/v1/account", b.APIKey(), nil), 200)
	mustCode(mustDo(t, c, http.MethodPost, us+"/v1/orders", b.APIKey(), limitOrder("on-us")), 201)
	// Fencing again is idempotent; unfence through the fenced region itself.
	mustCode(mustDo(t, c, http.MethodPost, eu+"/v1/account/fence", b.APIKey(), map[string]string{"region": "eu"}), 200)
	st := mustDo(t, c, http.MethodGet, us+"/v1/account/fence", b.APIKey(), nil)
	if !strings.Contains(string(st.body), `"eu"`) || !strings.Contains(string(st.body), `"enforced"`) {
		t.Fatalf("fence state: %s", st.body)
	}
	mustCode(mustDo(t, c, http.MethodPost, eu+"/v1/account/unfence", b.APIKey(), map[string]string{"region": "eu"}), 200)
	mustCode(mustDo(t, c, http.MethodPost, eu+"/v1/orders", b.APIKey(), limitOrder("after")), 201)

	log := b.Audit()
	spans := log.FenceSpans()
	if len(spans) != 1 || spans[0].Region != "eu" || spans[0].Until.IsZero() || !strings.Contains(spans[0].Cause, "rest fence through us") {
		t.Fatalf("FenceSpans() = %+v", spans)
	}
	rej := log.Rejected()
	if len(rej) != 1 || rej[0].ClientOrderID != "during" || rej[0].Outcome != OutcomeFenced || !log.FencedAt("eu", rej[0].Seq) {
		t.Fatalf("Rejected() = %+v", rej)
	}
	if bw := log.BookedWhileFenced(); len(bw) != 0 {
		t.Fatalf("BookedWhileFenced() = %+v", bw)
	}
	for _, id := range []string{"before", "after"} {
		for _, rec := range log.Booked() {
			if rec.ClientOrderID == id && log.FencedAt("eu", rec.Seq) {
				t.Fatalf("%s booked under the fence: %+v", id, rec)
			}
		}
	}
}

func TestFenceNoneRefusesKillSwitch(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	if err := b.FenceRegion("eu"); !errors.Is(err, ErrFenceNotOffered) {
		t.Fatalf("FenceRegion = %v, want ErrFenceNotOffered", err)
	}
	c := client(t, b, true, 5*time.Second)
	r := mustDo(t, c, http.MethodPost, b.Region("us").RESTURL()+"/v1/account/fence", b.APIKey(), map[string]string{"region": "eu"})
	if _, code := errBody(t, r); r.code != http.StatusNotImplemented || code != "fence_not_offered" {
		t.Fatalf("fence on FenceNone: %d %s", r.code, r.body)
	}
	if r := mustDo(t, c, http.MethodPost, b.Region("eu").RESTURL()+"/v1/orders", b.APIKey(), limitOrder("x")); r.code != 201 {
		t.Fatalf("order: %d %s", r.code, r.body)
	}
	if err := b.FenceRegion("mars"); !errors.Is(err, ErrFenceNotOffered) {
		t.Fatalf("FenceRegion(mars) = %v", err)
	}
}

func TestTokensCheckedREST(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.Tokens = TokensChecked; c.Fence = FenceEnforced })
	c := client(t, b, false, 5*time.Second)
	eu, us := b.Region("eu").RESTURL(), b.Region("us").RESTURL()
	steps := []struct {
		url, id, token string
		code           int
		errCode        string
	}{
		{eu, "t-none", "", http.StatusPreconditionRequired, "missing_token"},
		{eu, "t-bad", "abc", http.StatusBadRequest, "invalid_token"},
		{eu, "t-zero", "0", 201, ""}, // a path's first generation
		{eu, "t-5", "5", 201, ""},
		{us, "t-3", "3", http.StatusConflict, "stale_token"}, // account-wide: us saw nothing itself
		{us, "t-5b", "5", 201, ""},                           // equal is accepted
		{us, "t-6", "6", 201, ""},
		{eu, "t-5c", "5", http.StatusConflict, "stale_token"},
	}
	for i, s := range steps {
		r := doTok(t, c, http.MethodPost, s.url+"/v1/orders", b.APIKey(), s.token, limitOrder(s.id))
		if r.code != s.code {
			t.Fatalf("step %d %s: %d %s, want %d", i, s.id, r.code, r.body, s.code)
		}
		if s.errCode != "" {
			msg, code := errBody(t, r)
			if code != s.errCode || msg == "" {
				t.Fatalf("step %d %s: %s, want code %s", i, s.id, r.body, s.errCode)
			}
			if _, ok := b.Order(s.id); ok {
				t.Fatalf("step %d: rejected %s was booked", i, s.id)
			}
		} else if o := r.order(t); strconv.FormatUint(o.FencingToken, 10) != s.token {
			t.Fatalf("step %d: booked token %d, want %s", i, o.FencingToken, s.token)
		}
	}
	if h := b.HighestToken(); h != 6 {
		t.Fatalf("HighestToken = %d, want 6", h)
	}
	// A new leader fences eu and retires tokens below 9 in one call.
	r := doTok(t, c, http.MethodPost, us+"/v1/account/fence", b.APIKey(), "9", map[string]string{"region": "eu"})
	if r.code != 200 || !strings.Contains(string(r.body), `"highest_token":9`) {
		t.Fatalf("fence with token: %d %s", r.code, r.body)
	}
	if r := doTok(t, c, http.MethodPost, us+"/v1/orders", b.APIKey(), "8", limitOrder("t-8")); r.code != http.StatusConflict {
		t.Fatalf("token 8 after raise to 9: %d %s", r.code, r.body)
	}
	if err := b.RaiseToken(0); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("RaiseToken(0) = %v", err)
	}
	if err := b.RaiseToken(4); err != nil || b.HighestToken() != 9 {
		t.Fatalf("RaiseToken(4) = %v, highest %d (must not lower)", err, b.HighestToken())
	}
	log := b.Audit()
	var stale, missing int
	for _, rec := range log.Rejected() {
		switch rec.Outcome {
		case OutcomeStaleToken:
			stale++
		case OutcomeMissingToken:
			missing++
		}
	}
	if stale != 3 || missing != 1 {
		t.Fatalf("rejected: %d stale, %d missing; want 3, 1: %+v", stale, missing, log.Rejected())
	}
	if toks := log.Filter(func(r Record) bool { return r.Kind == KindToken }); len(toks) != 1 || toks[0].Token != 9 {
		t.Fatalf("token records = %+v", toks)
	}
	for _, rec := range log.Booked() {
		if rec.Token == 0 && rec.ClientOrderID != "t-zero" {
			t.Fatalf("booked record without its token: %+v", rec)
		}
	}
	if err := startBroker(t, nil).RaiseToken(3); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("RaiseToken with TokensOff = %v", err)
	}
}

// newOrderTok sends a limit NewOrderSingle with an optional TokenTag.
func (c *rawFIX) newOrderTok(clOrdID, token string) {
	c.sendRaw("D", func(b *quickfix.Body) {
		b.SetString(tag.ClOrdID, clOrdID)
		b.SetString(tag.Symbol, "EURUSD")
		b.SetString(tag.Side, "1")
		b.SetField(tag.TransactTime, quickfix.FIXUTCTimestamp{Time: time.Now().UTC()})
		b.SetString(tag.OrderQty, "100")
		b.SetString(tag.OrdType, "2")
		b.SetString(tag.Price, "1.5")
		if token != "" {
			b.SetString(TokenTag, token)
		}
	}, false)
}

func TestStrictPoliciesFIX(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.Tokens = TokensChecked; c.Fence = FenceEnforced; c.Dedup = DedupNone })
	seq := 1
	c := dialFIX(t, b, "eu", &seq)
	c.logon(false)

	rejected := func(id, want string) {
		t.Helper()
		er := expectExec(t, c, id, "8", "8")
		if txt := str(t, er, tag.Text); !strings.Contains(txt, want) {
			t.Fatalf("%s: Text %q, want it to contain %q", id, txt, want)
		}
		if _, ok := b.Order(id); ok {
			t.Fatalf("rejected %s was booked", id)
		}
	}
	c.newOrderTok("x-none", "")
	rejected("x-none", "requires a fencing token")
	c.newOrderTok("x-4", "4")
	expectExec(t, c, "x-4", "0", "0")
	c.newOrderTok("x-4", "4") // DedupNone: a second order
	expectExec(t, c, "x-4", "0", "0")
	if n := len(b.Bookings("x-4")); n != 2 {
		t.Fatalf("DedupNone over FIX: %d bookings", n)
	}
	c.newOrderTok("x-2", "2")
	rejected("x-2", "stale fencing token 2")
	if err := b.FenceRegion("eu"); err != nil {
		t.Fatal(err)
	}
	c.newOrderTok("x-5", "5")
	rejected("x-5", "region eu is fenced")
	if err := b.UnfenceRegion("eu"); err != nil {
		t.Fatal(err)
	}
	c.newOrderTok("x-5", "5")
	expectExec(t, c, "x-5", "0", "0")

	log := b.Audit()
	got := map[Outcome]int{}
	for _, r := range log.Orders() {
		got[r.Outcome]++
		if r.Service != "fix" || r.Region != "eu" {
			t.Fatalf("record %+v", r)
		}
	}
	want := map[Outcome]int{OutcomeMissingToken: 1, OutcomeNew: 3, OutcomeStaleToken: 1, OutcomeFenced: 1}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("outcomes %v, want %v", got, want)
		}
	}
	if d := log.Duplicates(); len(d) != 1 || d[0] != "x-4" {
		t.Fatalf("Duplicates() = %v", d)
	}
}

// A one-session-per-credential logon through us fences eu when the broker
// enforces fences: eu's REST orders are then rejected too.
func TestOnePerCredentialLogonFencesOldRegion(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.Fence = FenceEnforced; c.SessionPolicy = SessionOnePerCredential })
	hc := client(t, b, true, 5*time.Second)
	seq := 1
	a := dialFIX(t, b, "eu", &seq)
	a.logon(false)
	if len(b.FencedRegions()) != 0 {
		t.Fatalf("first logon fenced %v", b.FencedRegions())
	}
	bb := dialFIX(t, b, "us", &seq)
	bb.logon(false)
	a.expectClosed()
	if _, ok := b.FencedRegions()["eu"]; !ok {
		t.Fatalf("FencedRegions() = %v, want eu", b.FencedRegions())
	}
	r := mustDo(t, hc, http.MethodPost, b.Region("eu").RESTURL()+"/v1/orders", b.APIKey(), limitOrder("late-eu"))
	if r.code != http.StatusForbidden {
		t.Fatalf("REST order on eu after the logon moved to us: %d %s", r.code, r.body)
	}
	bb.newOrder("on-us", "2", "1.5", false)
	expectExec(t, bb, "on-us", "0", "0")
	spans := b.Audit().FenceSpans()
	if len(spans) != 1 || spans[0].Region != "eu" || !strings.Contains(spans[0].Cause, "FIX logon through us/fix/") {
		t.Fatalf("FenceSpans() = %+v", spans)
	}
}
