package rest_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// A probe answer that proves the request wrong (a refused credential, a
// request the server calls malformed, a path or method it does not have) is
// told apart from one a sound configuration also meets (a rate limit, a 5xx,
// a redirect, a timeout answer): only the first wraps
// pathdialer.ErrProbeRejected.
func TestProbeTellsARejectedRequestFromAnUnhealthyServer(t *testing.T) {
	eu := newServer(t, "eu", true, func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		if err != nil {
			code = http.StatusTeapot
		}
		w.WriteHeader(code)
	})
	ep := pathdialer.Endpoint{Name: "eu", Services: map[string]string{"rest": eu.URL}}
	for _, tc := range []struct {
		status   int
		rejected bool
	}{
		{400, true}, {401, true}, {403, true}, {404, true}, {405, true}, {410, true},
		{301, false}, {302, false}, {408, false}, {409, false}, {429, false},
		{500, false}, {502, false}, {503, false}, {504, false},
	} {
		probe, err := rest.Probe(rest.ProbeOptions{Path: "/status/" + strconv.Itoa(tc.status), TLSConfig: rootsOf(eu)})
		if err != nil {
			t.Fatal(err)
		}
		err = probe(context.Background(), ep)
		if err == nil {
			t.Fatalf("HTTP %d: probe succeeded", tc.status)
		}
		if got := errors.Is(err, pathdialer.ErrProbeRejected); got != tc.rejected {
			t.Errorf("HTTP %d: errors.Is(err, ErrProbeRejected) = %v, want %v (err: %v)", tc.status, got, tc.rejected, err)
		}
		var se *rest.ProbeStatusError
		if !errors.As(err, &se) || se.StatusCode != tc.status || se.Rejected() != tc.rejected || se.Endpoint != "eu" {
			t.Errorf("HTTP %d: errors.As finds %+v in %v", tc.status, se, err)
		}
		if !strings.Contains(err.Error(), "HTTP "+strconv.Itoa(tc.status)) {
			t.Errorf("HTTP %d: the error does not name the status: %v", tc.status, err)
		}
	}
	// A status the application expects is a success, whatever it is.
	probe, err := rest.Probe(rest.ProbeOptions{Path: "/status/404", Expect: []int{404}, TLSConfig: rootsOf(eu)})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe(context.Background(), ep); err != nil {
		t.Fatalf("an expected 404: %v", err)
	}
}

// A wrong API key fails Start at once with the real probe against real
// servers: the error names both endpoints, the status and the request's path,
// and repeats none of the credentials the servers were sent (a header, a
// query parameter, named as a credential or not).
func TestStartFailsFastOnARefusedKey(t *testing.T) {
	const (
		bearer   = "s3cret-bearer-token-1"
		queryKey = "s3cretQueryKey1"
		other    = "s3cretOtherValue1"
	)
	var sawAuth, sawQuery atomic.Int32
	refuse := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+bearer {
			sawAuth.Add(1)
		}
		if r.URL.Query().Get("apiKey") == queryKey && r.URL.Query().Get("k") == other {
			sawQuery.Add(1)
		}
		w.WriteHeader(http.StatusUnauthorized)
	}
	eu := newServer(t, "eu", true, refuse)
	us := newServer(t, "us", false, refuse)
	probe, err := rest.Probe(rest.ProbeOptions{
		Path:      "/v1/account?apiKey=" + queryKey + "&k=" + other,
		Header:    http.Header{"Authorization": {"Bearer " + bearer}},
		TLSConfig: rootsOf(eu, us),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"rest": eu.URL}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"rest": us.URL}},
	}
	cfg.Probe = probe
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	// Generous for a loaded machine: the probes must answer, not time out.
	cfg.ProbeTimeout, cfg.ProbeInterval, cfg.ProbeJitter = 10*time.Second, 15*time.Second, 0
	cfg.Engine.MaxHealthAge = 2 * cfg.ProbeInterval
	cfg.StartWait = 30 * time.Second
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	err = p.Start(context.Background())
	d := time.Since(start)
	if !errors.Is(err, pathdialer.ErrProbeRejected) || !errors.Is(err, pathdialer.ErrNoEligibleEndpoint) {
		t.Fatalf("Start: %v; want an error wrapping ErrProbeRejected and ErrNoEligibleEndpoint", err)
	}
	t.Logf("Start returned after %v: %v", d, err)
	var se *rest.ProbeStatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("errors.As finds %+v in Start's error", se)
	}
	if d >= cfg.StartWait {
		t.Fatalf("Start returned after %v: it waited out StartWait (%v)", d, cfg.StartWait)
	}
	for _, want := range []string{`"eu"`, `"us"`, "HTTP 401", "/v1/account"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("Start's error does not name %s: %v", want, err)
		}
	}
	for _, secret := range []string{bearer, queryKey, other} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("Start's error repeats a credential: %v", err)
		}
	}
	if sawAuth.Load() == 0 || sawQuery.Load() == 0 {
		t.Fatalf("the servers never saw the credentials (header %d, query %d): the test proves nothing", sawAuth.Load(), sawQuery.Load())
	}
}

// A probe Path without its leading slash would be glued to the endpoint's
// host ("https://api.example" + "v1/account"): refused by Probe, naming
// the field and the value to write.
func TestProbeRefusesPathWithoutLeadingSlash(t *testing.T) {
	for _, p := range []string{"v1/account", "https://api.broker.example/v1/account"} {
		_, err := rest.Probe(rest.ProbeOptions{Path: p})
		if !errors.Is(err, rest.ErrInvalidOptions) || !strings.Contains(err.Error(), "ProbeOptions.Path") || !strings.Contains(err.Error(), `"/`) {
			t.Fatalf("Probe(Path %q) = %v, want ErrInvalidOptions naming ProbeOptions.Path and a path beginning with /", p, err)
		}
	}
	if _, err := rest.Probe(rest.ProbeOptions{Path: "/v1/account?probe=1"}); err != nil {
		t.Fatalf("Probe(Path /v1/account?probe=1): %v", err)
	}
}

// The options errors of Probe, NewTransport and NewReconciler are
// *pathdialer.ConfigError with rest.ErrInvalidOptions as Kind, naming the
// field (and the endpoint).
func TestOptionsErrorsAreTyped(t *testing.T) {
	wsOnly := pathtest.FastConfig([]pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Primary: true, Services: map[string]string{"ws": "wss://eu.broker.example/ws"}},
		{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"ws": "wss://us.broker.example/ws"}},
	}, pathtest.NewProbes("eu", "us"))
	path, err := pathdialer.New(wsOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer path.Close()
	_, probeErr := rest.Probe(rest.ProbeOptions{Path: "v1/account"})
	_, trErr := rest.NewTransport(path, rest.Options{})
	_, recErr := rest.NewReconciler(rest.ReconcileOptions{URL: "https://broker.example/v1/orders/{client_order_id}", Parallel: -1})
	for _, tc := range []struct {
		name            string
		err             error
		field, endpoint string
	}{
		{"Probe", probeErr, "ProbeOptions.Path", ""},
		{"NewTransport", trErr, `Endpoints[0].Services["rest"]`, "eu"},
		{"NewReconciler", recErr, "ReconcileOptions.Parallel", ""},
	} {
		var ce *pathdialer.ConfigError
		if !errors.As(tc.err, &ce) || !errors.Is(tc.err, rest.ErrInvalidOptions) || errors.Is(tc.err, pathdialer.ErrInvalidConfig) {
			t.Fatalf("%s = %v (%T), want a *pathdialer.ConfigError matching rest.ErrInvalidOptions only", tc.name, tc.err, tc.err)
		}
		if ce.Field != tc.field || ce.Endpoint != tc.endpoint {
			t.Fatalf("%s: ConfigError{Field: %q, Endpoint: %q}, want {%q, %q}", tc.name, ce.Field, ce.Endpoint, tc.field, tc.endpoint)
		}
		if !strings.HasPrefix(tc.err.Error(), "rest: invalid options: ") {
			t.Fatalf("%s: %q does not begin with rest.ErrInvalidOptions's text", tc.name, tc.err)
		}
	}
}
