package pathdialer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

func validConfig() pathdialer.Config {
	cfg := baseConfig()
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	return cfg
}

func withEndpoints(eps ...pathdialer.Endpoint) func(*pathdialer.Config) {
	return func(c *pathdialer.Config) { c.Endpoints = eps }
}

func svc(addr string) map[string]string { return map[string]string{"rest": addr} }

// New refuses, with ErrInvalidConfig and a message naming the field, everything
// that cannot work.
func TestNewValidation(t *testing.T) {
	us := epUS
	cases := []struct {
		name   string
		edit   func(*pathdialer.Config)
		want   string // in the message
		wantIs error  // also matched by errors.Is, when set
		leak   string // must NOT appear in the message
	}{
		{name: "no probe", edit: func(c *pathdialer.Config) { c.Probe = nil }, want: "Probe is required"},
		{name: "engine probe set", edit: func(c *pathdialer.Config) {
			c.Engine.Probe = func(context.Context, engine.Endpoint) error { return nil }
		}, want: "Engine.Probe"},
		{name: "engine clock set", edit: func(c *pathdialer.Config) { c.Engine.Clock = fixedClock{} }, want: "Engine.Clock"},
		{name: "zero interval", edit: func(c *pathdialer.Config) { c.ProbeInterval = 0 }, want: "ProbeInterval"},
		{name: "zero timeout", edit: func(c *pathdialer.Config) { c.ProbeTimeout = 0 }, want: "ProbeTimeout"},
		{name: "negative jitter", edit: func(c *pathdialer.Config) { c.ProbeJitter = -time.Millisecond }, want: "ProbeJitter"},
		{name: "timeout equals interval", edit: func(c *pathdialer.Config) { c.ProbeTimeout = c.ProbeInterval }, want: "ProbeTimeout"},
		{name: "timeout plus jitter reaches interval", edit: func(c *pathdialer.Config) {
			c.ProbeTimeout, c.ProbeJitter = 600*time.Millisecond, 400*time.Millisecond
		}, want: "ProbeJitter"},
		{name: "health age below two intervals", edit: func(c *pathdialer.Config) {
			c.Engine.MaxHealthAge = 2*c.ProbeInterval - time.Nanosecond
		}, want: "MaxHealthAge"},
		{name: "no fencer", edit: func(c *pathdialer.Config) { c.Fencer = nil }, want: "Fencer is required"},
		{name: "zero fence timeout", edit: func(c *pathdialer.Config) { c.FenceTimeout = 0 }, want: "FenceTimeout"},
		{name: "zero fence attempts", edit: func(c *pathdialer.Config) { c.FenceAttempts = 0 }, want: "FenceAttempts"},
		{name: "fence backoff max below initial", edit: func(c *pathdialer.Config) {
			c.FenceBackoff = pathdialer.Backoff{Initial: time.Second, Max: time.Millisecond}
		}, want: "FenceBackoff"},
		{name: "zero fence backoff", edit: func(c *pathdialer.Config) { c.FenceBackoff = pathdialer.Backoff{} }, want: "FenceBackoff"},
		{name: "no reconciler", edit: func(c *pathdialer.Config) { c.Reconcile = nil }, want: "Reconcile is required"},
		{name: "zero reconcile timeout", edit: func(c *pathdialer.Config) { c.ReconcileTimeout = 0 }, want: "ReconcileTimeout"},
		{name: "zero reconcile attempts", edit: func(c *pathdialer.Config) { c.ReconcileAttempts = 0 }, want: "ReconcileAttempts"},
		{name: "bad reconcile backoff", edit: func(c *pathdialer.Config) { c.ReconcileBackoff.Initial = 0 }, want: "ReconcileBackoff"},
		{name: "zero failback backoff", edit: func(c *pathdialer.Config) { c.FailbackBackoff = pathdialer.Backoff{} }, want: "FailbackBackoff is {Initial: 0s, Max: 0s}"},
		{name: "failback backoff max below initial", edit: func(c *pathdialer.Config) {
			c.FailbackBackoff = pathdialer.Backoff{Initial: time.Minute, Max: time.Second}
		}, want: "FailbackBackoff"},
		{name: "negative grace", edit: func(c *pathdialer.Config) { c.InflightGrace = -1 }, want: "InflightGrace"},
		{name: "no endpoints", edit: withEndpoints(), want: "need at least two"},
		{name: "single endpoint", edit: withEndpoints(epEU), want: "need at least two"},
		{name: "endpoint without services", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us"}), want: "Endpoints[1]"},
		{name: "blank service name", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: map[string]string{" ": "h:1"}}), want: "blank service name"},
		{name: "address neither URL nor host:port", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: svc("api-us.broker.example")}), want: `Endpoints[1] ("us") service "rest"`},
		{name: "URL without host", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: svc("https:///v1")}), want: "no host"},
		{name: "URL without port, unknown scheme", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: svc("fix://fix-us.example")}), want: "no default"},
		{name: "invalid URL hides credentials", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: svc("https://user:s3cret@host:badport/")}), want: "Endpoints[1]", leak: "s3cret"},
		{name: "address without port hides credentials", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: svc("api-us.broker.example/v1?key=s3cret")}), want: "Endpoints[1]", leak: "s3cret"},
		{name: "bad port hides credentials", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: svc("key:s3cret@api-us.broker.example")}), want: "port", leak: "s3cret"},
		{name: "port out of range", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: svc("fix-us.example:70000")}), want: "port"},
		{name: "two primaries", edit: withEndpoints(epEU, func() pathdialer.Endpoint { e := us; e.Primary = true; return e }()), want: "Endpoints[1]", wantIs: engine.ErrSecondPrimary},
		{name: "no primary", edit: withEndpoints(func() pathdialer.Endpoint { e := epEU; e.Primary = false; return e }(), us), want: "Primary", wantIs: engine.ErrNoPrimary},
		{name: "duplicate name", edit: withEndpoints(epEU, func() pathdialer.Endpoint { e := us; e.Name = "eu"; return e }()), want: "Endpoints[1]", wantIs: engine.ErrDuplicateEndpoint},
		{name: "blank name", edit: withEndpoints(epEU, func() pathdialer.Endpoint { e := us; e.Name = " "; return e }()), want: "Endpoints[1]", wantIs: engine.ErrBlankField},
		{name: "rest address not http(s)", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: svc("ftp://api-us.broker.example:21/?key=s3cret")}), want: `service "rest"`, leak: "s3cret"},
		{name: "rest address host:port", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: svc("api-us.broker.example:443")}), want: "http"},
		{name: "fix address a URL", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: map[string]string{"fix": "https://fix-us.example:9878"}}), want: "host:port"},
		{name: "ws address not ws", edit: withEndpoints(epEU, pathdialer.Endpoint{Name: "us", Region: "us", Services: map[string]string{"ws": "ftp://s.example:21"}}), want: "ws://"},
		{name: "no primary", edit: withEndpoints(func() pathdialer.Endpoint { e := epEU; e.Primary = false; return e }(), us), want: "Primary", wantIs: engine.ErrNoPrimary},
		{name: "blank region", edit: withEndpoints(epEU, func() pathdialer.Endpoint { e := us; e.Region = ""; return e }()), want: "Region", wantIs: engine.ErrBlankField},
		{name: "engine threshold", edit: func(c *pathdialer.Config) { c.Engine.FailureThreshold = 0 }, want: "FailureThreshold", wantIs: engine.ErrInvalidConfig},
		{name: "engine flap window", edit: func(c *pathdialer.Config) { c.Engine.FlapWindow = 0 }, want: "FlapWindow", wantIs: engine.ErrInvalidConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := validConfig()
			c.edit(&cfg)
			// Validate and New agree: whatever New refuses, Validate refuses.
			if verr := cfg.Validate(); verr == nil {
				t.Errorf("Validate accepted a config New refuses")
			}
			p, err := pathdialer.New(cfg)
			if err == nil {
				_ = p.Close()
				t.Fatal("New accepted the config")
			}
			if !errors.Is(err, pathdialer.ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			if ce := (*pathdialer.ConfigError)(nil); !errors.As(err, &ce) || ce.Field == "" {
				t.Errorf("error %v (%T) is not a *pathdialer.ConfigError naming a field", err, err)
			}
			if c.wantIs != nil && !errors.Is(err, c.wantIs) {
				t.Errorf("error %v does not wrap %v", err, c.wantIs)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
			if c.leak != "" && strings.Contains(err.Error(), c.leak) {
				t.Errorf("error %q leaks %q", err, c.leak)
			}
		})
	}
}

type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.Time{} }

// The configurations New must accept: the defaults, BrokerFencesAtLogon without a
// Fencer, host:port and URL addresses with default ports.
func TestNewAccepts(t *testing.T) {
	for name, edit := range map[string]func(*pathdialer.Config){
		"valid": func(*pathdialer.Config) {},
		"broker fences without Fencer": func(c *pathdialer.Config) {
			c.Fencer = nil
			c.Engine.BrokerFencesAtLogon = true
		},
		"addresses": func(c *pathdialer.Config) {
			c.AllowPlaintext = true // b's "rest" is plain http:// to a remote host
			withEndpoints(
				pathdialer.Endpoint{Name: "a", Region: "r1", Primary: true, Services: map[string]string{"rest": "https://a.example", "ws": "wss://a.example/ws", "fix": "10.0.0.1:9878", "custom": "[::1]:4000"}},
				pathdialer.Endpoint{Name: "b", Region: "r2", Priority: 1, Services: map[string]string{"rest": "http://b.example", "ws": "ws://b.example:8080/ws", "fix": "b.example:9878", "custom": "[::1]:4001"}},
				pathdialer.Endpoint{Name: "c", Region: "r3", Priority: 2, Services: map[string]string{"rest": "https://c.example", "ws": "wss://c.example/ws", "fix": "[::1]:4000", "custom": "[::1]:4002"}},
			)(c)
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := validConfig()
			edit(&cfg)
			p, err := pathdialer.New(cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if ep, gen := p.Active(); !ep.Primary || gen != 0 {
				t.Errorf("Active = %+v/%d, want the primary", ep, gen)
			}
			_ = p.Close()
		})
	}
}

// New copies the endpoints: changing the caller's maps afterwards changes nothing.
func TestNewCopiesEndpoints(t *testing.T) {
	cfg := validConfig()
	eu := epEU
	eu.Services = map[string]string{"rest": "https://api-eu.broker.example", "fix": "fix-eu.broker.example:9878"}
	cfg.Endpoints = []pathdialer.Endpoint{eu, epUS}
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	eu.Services["rest"] = "https://evil.example"
	got, _ := p.Endpoint("eu")
	if got.Services["rest"] != "https://api-eu.broker.example" {
		t.Errorf("endpoint changed through the caller's map: %v", got.Services)
	}
	if _, ok := p.Endpoint("nowhere"); ok {
		t.Error("Endpoint(nowhere) found")
	}
	if eps := p.Endpoints(); len(eps) != 2 || eps[0].Name != "eu" || eps[1].Name != "us" {
		t.Errorf("Endpoints = %+v", eps)
	}
}

func TestHostPort(t *testing.T) {
	ep := pathdialer.Endpoint{Name: "x", Services: map[string]string{
		"rest": "https://api.example", "ws": "ws://s.example/stream", "fix": "fix.example:9878", "alt": "https://api.example:8443/v1",
	}}
	for svc, want := range map[string]string{"rest": "api.example:443", "ws": "s.example:80", "fix": "fix.example:9878", "alt": "api.example:8443"} {
		got, err := ep.HostPort(svc)
		if err != nil || got != want {
			t.Errorf("HostPort(%s) = %q, %v; want %q", svc, got, err, want)
		}
	}
	if _, err := ep.HostPort("nope"); !errors.Is(err, pathdialer.ErrUnknownService) {
		t.Errorf("HostPort(nope): %v", err)
	}
	if a, ok := ep.Address("fix"); !ok || a != "fix.example:9878" {
		t.Errorf("Address(fix) = %q, %v", a, ok)
	}
}

func TestBackoffAndHelpers(t *testing.T) {
	r := pathdialer.ReconcileAll(
		func(context.Context, pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
			return []pathdialer.Settlement{{OrderID: "a", Fate: pathdialer.FateFilled}}, nil
		},
		func(context.Context, pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
			return []pathdialer.Settlement{{OrderID: "b", Fate: pathdialer.FateResting}}, errReconcile
		},
		func(context.Context, pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
			t.Error("reconciler after a failure was called")
			return nil, nil
		},
	)
	s, err := r(context.Background(), pathdialer.Reconciliation{})
	if !errors.Is(err, errReconcile) || !strings.Contains(err.Error(), "reconciler 2 of 3") || len(s) != 2 {
		t.Errorf("ReconcileAll = %v, %v", s, err)
	}
	if err := pathdialer.LocalFenceOnly(context.Background(), pathdialer.Fence{}); err != nil {
		t.Error(err)
	}
	if s, err := pathdialer.NoReconcile(context.Background(), pathdialer.Reconciliation{}); s != nil || err != nil {
		t.Error(s, err)
	}
}

// A service address with credentials is refused at New, without echoing
// them: a ws URL with user:pass once passed validation and then halted
// trading.
func TestNewRefusesCredentialsInServiceAddresses(t *testing.T) {
	for _, svc := range []string{"rest", "ws"} {
		cfg := baseConfig()
		cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
		cfg.Fencer = pathdialer.LocalFenceOnly
		cfg.Reconcile = pathdialer.NoReconcile
		us := epUS
		us.Services = map[string]string{"rest": "https://api-us.broker.example", svc: map[string]string{"rest": "https://alice:s3cret@api-us.broker.example", "ws": "wss://alice:s3cret@ws-us.broker.example/ws"}[svc]}
		cfg.Endpoints = []pathdialer.Endpoint{epEU, us}
		_, err := pathdialer.New(cfg)
		if !errors.Is(err, pathdialer.ErrInvalidConfig) || !strings.Contains(err.Error(), "credentials") {
			t.Fatalf("%s: New = %v, want ErrInvalidConfig naming the credentials", svc, err)
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "alice") {
			t.Fatalf("%s: the error echoes the credentials: %v", svc, err)
		}
	}
}

// A Config not started from DefaultConfig (the zero value, or one built field
// by field) is refused with an error that points to DefaultConfig, not with
// the first field that happens to be missing.
func TestZeroConfigPointsToDefaultConfig(t *testing.T) {
	probe := func(context.Context, pathdialer.Endpoint) error { return nil }
	for name, cfg := range map[string]pathdialer.Config{
		"zero value": {},
		"only the quick start's fields": {
			Endpoints: []pathdialer.Endpoint{
				{Name: "eu", Region: "eu", Primary: true, Services: map[string]string{"rest": "https://eu.example:443"}},
				{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"rest": "https://us.example:443"}},
			},
			Probe:     probe,
			Fencer:    pathdialer.LocalFenceOnly,
			Reconcile: pathdialer.NoReconcile,
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := pathdialer.New(cfg)
			if !errors.Is(err, pathdialer.ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), "DefaultConfig()") {
				t.Fatalf("New = %v, does not point to DefaultConfig()", err)
			}
		})
	}
}

// Orders over plaintext HTTP to a remote host carry the API key and the order
// in the clear: a "rest" http:// address is refused unless it is loopback or
// the Config opts in with AllowPlaintext.
func TestPlaintextRESTAddress(t *testing.T) {
	pair := func(a, b string) []pathdialer.Endpoint {
		return []pathdialer.Endpoint{
			{Name: "eu", Region: "eu", Primary: true, Services: map[string]string{"rest": a}},
			{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"rest": b}},
		}
	}
	for _, tc := range []struct {
		name      string
		eps       []pathdialer.Endpoint
		allow, ok bool
	}{
		{"remote http refused", pair("https://eu.broker.example", "http://us.broker.example"), false, false},
		{"remote http by IP refused", pair("http://203.0.113.7:8080", "https://us.broker.example"), false, false},
		{"remote http with opt-in", pair("https://eu.broker.example", "http://us.broker.example"), true, true},
		{"loopback http", pair("http://127.0.0.1:8080", "http://[::1]:8081"), false, true},
		{"localhost http", pair("http://localhost:8080", "https://us.broker.example"), false, true},
		{"https", pair("https://eu.broker.example", "https://us.broker.example"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			cfg.Endpoints = tc.eps
			cfg.AllowPlaintext = tc.allow
			p, err := pathdialer.New(cfg)
			if tc.ok {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_ = p.Close()
				return
			}
			if !errors.Is(err, pathdialer.ErrInvalidConfig) || !strings.Contains(err.Error(), "AllowPlaintext") || !strings.Contains(err.Error(), "https://") {
				t.Fatalf("New = %v, want ErrInvalidConfig naming https:// and AllowPlaintext", err)
			}
		})
	}
}
