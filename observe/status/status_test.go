package status_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/observe/status"
	"github.com/brokerpath/brokerpath/pathdialer"
)

const (
	hostile = `<script>alert("x")</script>`
	orderID = "ORD-SECRET-991"
)

// newPath returns a started Path whose primary "eu" fails while euDown is set,
// and whose backup has a hostile name.
func newPath(t *testing.T, euDown *atomic.Bool, onEvent ...func(pathdialer.Event)) *pathdialer.Path {
	t.Helper()
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west-1", Primary: true, Services: map[string]string{"rest": "https://api-eu.broker.example"}},
		{Name: hostile, Region: "us-east-1", Priority: 10, Services: map[string]string{"rest": "https://api-us.broker.example"}},
	}
	cfg.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
		if ep.Name == "eu" && euDown.Load() {
			return errors.New("connection refused")
		}
		return nil
	}
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 20*time.Millisecond, 10*time.Millisecond, 0
	cfg.Engine.FailureThreshold = 2
	cfg.Engine.MaxHealthAge = time.Second
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	if len(onEvent) > 0 {
		cfg.OnEvent = onEvent[0]
	}
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

func get(t *testing.T, h http.Handler, target, accept string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body)
	}
	return rec
}

// jsonStatus is how a script reads the JSON: states are strings.
type jsonStatus struct {
	Active    string `json:"active"`
	Token     uint64 `json:"switches"`
	Gate      string `json:"order_flow"`
	Endpoints []struct {
		Name   string `json:"name"`
		State  string `json:"state"`
		Active bool   `json:"active"`
	} `json:"endpoints"`
	Monitor struct {
		Stale bool `json:"stale"`
	} `json:"monitor"`
	Events []struct {
		Kind string `json:"kind"`
	} `json:"events"`
}

func TestJSONStatesAreStrings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		p := newPath(t, &down)
		defer p.Close()
		h := status.Handler(p, status.Options{})
		for _, c := range []struct{ target, accept string }{
			{"/status.json", ""},
			{"/?format=json", ""},
			{"/", "application/json"},
		} {
			rec := get(t, h, c.target, c.accept)
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s: Content-Type %q", c.target, ct)
			}
			var s jsonStatus
			if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
				t.Fatalf("%s: %v\n%s", c.target, err, rec.Body)
			}
			if s.Active != "eu" || s.Gate != "OPEN" || len(s.Endpoints) != 2 || s.Endpoints[0].State != "HEALTHY" || !s.Endpoints[0].Active {
				t.Errorf("%s: %+v", c.target, s)
			}
		}
		if ct := get(t, h, "/", "text/html,application/json;q=0.9").Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("a browser got %q", ct)
		}
	})
}

// After a failover to the endpoint with the hostile name, the HTML shows it as
// active, escaped, and never as markup; the in-flight order's ID is not shown.
func TestHTMLShowsActiveAndEscapes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		rec := status.NewRecorder()
		p := newPath(t, &down, rec.OnEvent)
		defer p.Close()
		h := status.Handler(p, status.Options{Title: "acct <main>", Refresh: 5 * time.Second, Recorder: rec, MetricsURL: "/metrics"})

		body := get(t, h, "/", "").Body.String()
		if !strings.Contains(body, `<b id="active">eu</b>`) || !strings.Contains(body, ">orders flowing<") {
			t.Errorf("HTML does not show eu active and orders flowing:\n%s", body)
		}

		if _, err := p.Acquire(context.Background(), pathdialer.ServiceREST, orderID); err != nil {
			t.Fatal(err)
		}
		down.Store(true)
		// One Snapshot per look: two could straddle the switch (the gate
		// still open, then token 1 with the gate held).
		for i := 0; ; i++ {
			if s := p.Snapshot(); s.Gate == pathdialer.GateOpen && s.Token > 0 {
				break
			}
			if i > 250 {
				t.Fatalf("no failover: %+v", p.Snapshot())
			}
			<-time.After(20 * time.Millisecond)
		}
		synctest.Wait()

		resp := get(t, h, "/", "")
		body = resp.Body.String()
		if strings.Contains(body, "<script") || strings.Contains(body, "acct <main>") || !strings.Contains(body, "acct &lt;main&gt;") {
			t.Errorf("hostile text rendered as markup:\n%s", body)
		}
		escaped := `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`
		if !strings.Contains(body, `<b id="active">`+escaped+`</b>`) {
			t.Errorf("HTML does not show the escaped hostile endpoint as active:\n%s", body)
		}
		for _, want := range []string{"DOWN", "CUT OFF", "cutting eu off first", "asking the broker about 1 order(s)",
			`http-equiv="refresh" content="5"`, `<a href="status.json">JSON</a>`, `<a href="/metrics">metrics</a>`,
			`id="time-to-detect"`, "waiting for eu to recover (DOWN)", `id="reconciled">rest 1<`} {
			if !strings.Contains(body, want) {
				t.Errorf("HTML lacks %q", want)
			}
		}
		if os.Getenv("STATUS_DUMP") != "" {
			t.Log(body)
		}
		if csp := resp.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("CSP %q", csp)
		}
		js := get(t, h, "/status.json", "").Body.String()
		for _, out := range []string{body, js} {
			if strings.Contains(out, orderID) {
				t.Errorf("order ID shown without ShowOrderIDs")
			}
			if strings.Contains(out, "broker.example") && out == body {
				t.Errorf("HTML shows an endpoint address")
			}
		}
		var tree any
		if err := json.Unmarshal([]byte(js), &tree); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys(tree) {
			if !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(k) {
				t.Errorf("JSON key %q is not snake_case", k)
			}
		}
		for _, bad := range []string{`"verified_at"`, `"0001-01-01`, `"last_success_age"`, `"interval"`} {
			if strings.Contains(js, bad) {
				t.Errorf("JSON contains %s:\n%s", bad, js)
			}
		}
		var s jsonStatus
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			t.Fatal(err)
		}
		if s.Active != hostile || s.Token != 1 || s.Endpoints[0].State != "DOWN" {
			t.Errorf("JSON after failover: %+v", s)
		}
		shown := get(t, status.Handler(p, status.Options{ShowOrderIDs: true}), "/status.json", "").Body.String()
		if !strings.Contains(shown, orderID) {
			t.Errorf("ShowOrderIDs: order ID missing")
		}
	})
}

func TestOnlyGetAndHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		p := newPath(t, &down)
		defer p.Close()
		rec := httptest.NewRecorder()
		status.Handler(p, status.Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Fatalf("POST: %d %v", rec.Code, rec.Header())
		}
	})
}

// keys returns every object key in a decoded JSON value.
func keys(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out = append(append(out, k), keys(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, keys(e)...)
		}
	}
	return out
}
