package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var compSeq atomic.Int64

func uniqueCompIDs() (client, broker string) {
	n := compSeq.Add(1)
	return fmt.Sprintf("CMDCLIENT%d", n), fmt.Sprintf("CMDBROKER%d", n)
}

func post(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func get(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("decode %s: %v", url, err)
	}
	return resp.StatusCode
}

func TestAdminSwitchesFaultsAndReports(t *testing.T) {
	cfg := simbroker.DefaultConfig()
	cfg.TickInterval = 0
	cfg.ClientCompID, cfg.BrokerCompID = uniqueCompIDs()
	b, err := simbroker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := httptest.NewServer(newAdmin(b))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()

	ok := []struct {
		query string
		svc   simbroker.Service
		want  string
	}{
		{"region=eu&service=rest&kind=blackhole", simbroker.REST, "blackhole"},
		{"region=eu&service=ws&kind=latency&delay=150ms&jitter=10ms", simbroker.WS, "latency"},
		{"region=us&service=rest&kind=503&n=4", simbroker.REST, "503(n=4)"},
		{"region=us&service=fix&kind=unknown&n=2", simbroker.FIX, "unknown-outcome(n=2)"},
		{"region=us&service=ws&kind=partial", simbroker.WS, "partial"},
		{"region=us&service=probe&kind=flap&period=1h&fault=blackhole", simbroker.Probe, "flap"},
	}
	for _, tc := range ok {
		code, body := post(t, srv.URL+"/fault?"+tc.query)
		if code != 200 {
			t.Fatalf("%s: %d %v", tc.query, code, body)
		}
	}
	faults := b.Faults()
	for _, tc := range ok {
		region := strings.TrimPrefix(strings.SplitN(tc.query, "&", 2)[0], "region=")
		got := faults[region][tc.svc]
		if len(got) == 0 || !strings.HasPrefix(got[0], tc.want) {
			t.Errorf("%s: Faults()[%s][%s] = %v, want %s", tc.query, region, tc.svc, got, tc.want)
		}
	}
	if code, _ := post(t, srv.URL+"/fault?region=eu&kind=partition"); code != 200 {
		t.Fatalf("partition: %d", code)
	}
	if got := b.Faults()["eu"][simbroker.Probe]; len(got) != 1 || got[0] != "blackhole" {
		t.Fatalf("partition set %v", got)
	}
	if code, _ := post(t, srv.URL+"/fault?region=eu&service=rest&kind=none"); code != 200 || len(b.Faults()["eu"][simbroker.REST]) != 0 {
		t.Fatalf("none: %d %v", code, b.Faults())
	}
	for _, bad := range []string{
		"region=eu&service=rest&kind=meteor",
		"region=mars&service=rest&kind=down",
		"region=eu&service=smtp&kind=down",
		"region=eu&service=fix&kind=503",
		"region=eu&service=rest&kind=latency&delay=soon",
		"region=eu&service=rest&kind=unknown&n=x",
	} {
		if code, body := post(t, srv.URL+"/fault?"+bad); code != 400 || body["error"] == "" {
			t.Errorf("%s: %d %v; want 400 with an error", bad, code, body)
		}
	}
	if code, body := post(t, srv.URL+"/tick?stream=px.EURUSD"); code != 200 || body["seq"] != float64(1) {
		t.Fatalf("tick: %d %v", code, body)
	}
	if code, _ := post(t, srv.URL+"/tick?stream=nope"); code != 400 {
		t.Fatalf("tick unknown stream: %d", code)
	}
	if code, _ := post(t, srv.URL+"/lag?region=us&lag=2s"); code != 200 {
		t.Fatalf("lag: %d", code)
	}

	// Place an order through the broker, then read it back from the admin.
	c := b.HTTPClient()
	defer c.CloseIdleConnections()
	req, _ := http.NewRequest("POST", b.Region("eu").RESTURL()+"/v1/orders",
		strings.NewReader(`{"client_order_id":"adm-1","symbol":"EURUSD","side":"buy","qty":"1","type":"market"}`))
	req.Header.Set("X-API-Key", b.APIKey())
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("order: %d", resp.StatusCode)
	}
	var audit struct {
		Records        []simbroker.Record
		BookedByRegion map[string]int `json:"booked_by_region"`
		Duplicates     []string
	}
	if code := get(t, srv.URL+"/audit", &audit); code != 200 || len(audit.Records) != 1 || audit.BookedByRegion["eu"] != 1 || len(audit.Duplicates) != 0 {
		t.Fatalf("audit: %d %+v", code, audit)
	}
	var book struct{ Orders []simbroker.Order }
	if get(t, srv.URL+"/book", &book); len(book.Orders) != 1 || book.Orders[0].ClientOrderID != "adm-1" {
		t.Fatalf("book: %+v", book)
	}
	var eps struct {
		Regions map[string]map[string]string
		CAFile  string `json:"ca_file"`
	}
	if get(t, srv.URL+"/endpoints", &eps); eps.Regions["eu"]["rest"] != b.Region("eu").RESTURL() || eps.CAFile != b.CAFile() {
		t.Fatalf("endpoints: %+v", eps)
	}
	var stats map[string]map[string]any
	if get(t, srv.URL+"/stats", &stats); stats["eu"]["ws"] == nil {
		t.Fatalf("stats: %v", stats)
	}
}

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunPrintsEndpointsAndStopsOnCancel(t *testing.T) {
	client, broker := uniqueCompIDs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-tick", "0", "-lag", "us=1s", "-session-policy", "one",
			"-client-compid", client, "-broker-compid", broker, "-api-key", "drill-key-123"}, &out, &errOut)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "Ctrl-C") {
		if time.Now().After(deadline) {
			t.Fatalf("no endpoint listing; stdout %q stderr %q", out.String(), errOut.String())
		}
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v (stderr %q)", err, errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	text := out.String()
	for _, want := range []string{"region eu", "region us", "REST   https://127.0.0.1:", "WS     wss://127.0.0.1:",
		"FIX    127.0.0.1:", "CA file", "drill-key-123", "one-per-credential", "us=1s"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	admin := regexp.MustCompile(`admin\s+(http://127\.0\.0\.1:\d+)`).FindStringSubmatch(text)
	if admin == nil {
		t.Fatalf("no admin URL in:\n%s", text)
	}
	var eps map[string]any
	if code := get(t, admin[1]+"/endpoints", &eps); code != 200 {
		t.Fatalf("admin endpoints: %d", code)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
	if !strings.Contains(out.String(), "stopping") {
		t.Fatal("no stopping line")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-lag", "us"},
		{"-lag", "us=soon"},
		{"-session-policy", "both"},
		{"-dedup", "sometimes"},
		{"-fence", "maybe"},
		{"-tokens", "lax"},
		{"-regions", "eu"},
		{"extra"},
	} {
		var out, errOut syncBuffer
		if err := run(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("run(%v) succeeded", args)
		}
	}
}

// The start-up output names the policies and services, documents the REST
// order API, and its ready curl lines work as printed (run here through Go's
// client, with the same CA, key, header, URL and body).
func TestRunPrintsPoliciesAndWorkingCurlLines(t *testing.T) {
	client, broker := uniqueCompIDs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-tick", "0", "-dedup", "none", "-fence", "enforced", "-tokens", "checked",
			"-client-compid", client, "-broker-compid", broker, "-api-key", "drill-key-123"}, &out, &errOut)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "Ctrl-C") {
		if time.Now().After(deadline) {
			t.Fatalf("no endpoint listing; stdout %q stderr %q", out.String(), errOut.String())
		}
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v (stderr %q)", err, errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	text := out.String()
	for _, want := range []string{"policies  dedup none · fence enforced · tokens checked · session concurrent",
		"  rest   order API", "  probe  the same REST server", "  ws     WebSocket", "  fix    FIX 4.4",
		"POST   /v1/orders", "GET    /v1/orders/{client_order_id}", "POST   /v1/account/fence", "X-Fencing-Token"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	placeRE := regexp.MustCompile(`curl -sS --fail-with-body --cacert '(\S+)' -H 'X-API-Key: (\S+)' -H '(X-Fencing-Token): (\d+)' -H 'Content-Type: application/json' \\\n\s+-d '(\{[^']*\})' (https://\S+/v1/orders)\n`)
	m := placeRE.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no order curl line in:\n%s", text)
	}
	probeRE := regexp.MustCompile(`curl -sS --fail-with-body --cacert \S+ -H 'X-API-Key: \S+' (https://\S+/v1/account)\n`)
	pm := probeRE.FindStringSubmatch(text)
	if pm == nil {
		t.Fatalf("no probe curl line in:\n%s", text)
	}
	fenceRE := regexp.MustCompile(`curl -sS --fail-with-body --cacert \S+ -H 'X-API-Key: \S+' -d '(\{"region":"eu"\})' (https://\S+/v1/account/fence)\n`)
	fm := fenceRE.FindStringSubmatch(text)
	if fm == nil {
		t.Fatalf("no fence curl line in:\n%s", text)
	}
	pem, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	call := func(method, url, body string, hdr ...string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("X-API-Key", m[2])
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := call("POST", m[6], m[5], m[3], m[4], "Content-Type", "application/json"); code != 201 {
		t.Fatalf("printed order line: %d", code)
	}
	if code := call("GET", pm[1], ""); code != 200 {
		t.Fatalf("printed probe line: %d", code)
	}
	if code := call("POST", fm[2], fm[1]); code != 200 {
		t.Fatalf("printed fence line: %d", code)
	}
	if code := call("POST", m[6], strings.Replace(m[5], "hello-1", "hello-2", 1), m[3], m[4]); code != http.StatusForbidden {
		t.Fatalf("order on the fenced region: %d, want 403", code)
	}
	admin := regexp.MustCompile(`admin\s+(http://127\.0\.0\.1:\d+)`).FindStringSubmatch(text)
	if code, body := post(t, admin[1]+"/unfence?region=eu"); code != 200 || body["fenced"] != false {
		t.Fatalf("admin unfence: %d %v", code, body)
	}
	if code, body := post(t, admin[1]+"/token?value=7"); code != 200 || body["highest_token"] != float64(7) {
		t.Fatalf("admin token: %d %v", code, body)
	}
	var audit struct {
		FenceSpans []simbroker.FenceSpan `json:"fence_spans"`
		Policies   string
	}
	if get(t, admin[1]+"/audit", &audit); len(audit.FenceSpans) != 1 || audit.FenceSpans[0].Until.IsZero() || !strings.Contains(audit.Policies, "fence=enforced") {
		t.Fatalf("admin audit: %+v", audit)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
}

func TestAdminFenceOnFenceNone(t *testing.T) {
	cfg := simbroker.DefaultConfig()
	cfg.TickInterval = 0
	cfg.ClientCompID, cfg.BrokerCompID = uniqueCompIDs()
	b, err := simbroker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := httptest.NewServer(newAdmin(b))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	if code, body := post(t, srv.URL+"/fence?region=eu"); code != http.StatusNotImplemented || !strings.Contains(fmt.Sprint(body["error"]), "offers no fence") {
		t.Fatalf("fence on FenceNone: %d %v", code, body)
	}
	if code, _ := post(t, srv.URL+"/token?value=x"); code != 400 {
		t.Fatalf("token x: %d", code)
	}
}
