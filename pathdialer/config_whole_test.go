package pathdialer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// wantConfigError asserts that err is a *pathdialer.ConfigError matching
// ErrInvalidConfig, naming field and endpoint, whose text holds every string
// of want.
func wantConfigError(t *testing.T, err error, field, endpoint string, want ...string) {
	t.Helper()
	var ce *pathdialer.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v (%T), want a *pathdialer.ConfigError", err, err)
	}
	if !errors.Is(err, pathdialer.ErrInvalidConfig) {
		t.Fatalf("New = %v, does not match ErrInvalidConfig", err)
	}
	if ce.Field != field || ce.Endpoint != endpoint {
		t.Fatalf("ConfigError{Field: %q, Endpoint: %q}, want {%q, %q}: %v", ce.Field, ce.Endpoint, field, endpoint, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("New = %v, want the text to hold %q", err, w)
		}
	}
}

// Every refusal of New is a *ConfigError naming the field, and the endpoint
// when the fault is one endpoint's; sentinels of the cause still match.
func TestConfigErrorNamesFieldAndEndpoint(t *testing.T) {
	cfg := validConfig()
	cfg.ProbeTimeout = 0
	_, err := pathdialer.New(cfg)
	wantConfigError(t, err, "ProbeTimeout", "", "must be > 0")

	cfg = validConfig()
	us := epUS
	us.Region = " "
	cfg.Endpoints = []pathdialer.Endpoint{epEU, us}
	_, err = pathdialer.New(cfg)
	wantConfigError(t, err, "Endpoints[1].Region", "us", "Region is blank")
	if !errors.Is(err, engine.ErrBlankField) {
		t.Fatalf("New = %v, want errors.Is engine.ErrBlankField", err)
	}

	cfg = validConfig()
	cfg.Endpoints = []pathdialer.Endpoint{epEU, {Name: "us", Region: "us", Services: map[string]string{"rest": "https://api-us.broker.example", "fix": "https://fix-us.broker.example"}}}
	_, err = pathdialer.New(cfg)
	wantConfigError(t, err, `Endpoints[1].Services["fix"]`, "us", "host:port")
}

// A Fencer that only stops this side cannot be declared broker-confirmed:
// BrokerFencesViaFencer would make NOT_RECEIVED final on a fence that does
// not exist.
func TestNewRefusesBrokerFenceWithLocalFenceOnly(t *testing.T) {
	cfg := validConfig()
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.BrokerFencesViaFencer = true
	_, err := pathdialer.New(cfg)
	wantConfigError(t, err, "BrokerFencesViaFencer and Fencer", "", "LocalFenceOnly")

	// A Fencer of one's own may be declared broker-confirmed.
	cfg.Fencer = func(context.Context, pathdialer.Fence) error { return nil }
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatalf("New with a Fencer of its own and BrokerFencesViaFencer: %v", err)
	}
	_ = p.Close()
}

// A ReconcileByService key that no endpoint names (a misspelt "rest") is
// refused at New, naming the key and the services the endpoints have.
func TestNewRefusesReconcileByServiceUnknownService(t *testing.T) {
	cfg := validConfig()
	cfg.Reconcile = nil
	cfg.ReconcileByService = map[string]pathdialer.ReconcileFunc{"rset": pathdialer.NoReconcile, "fix": pathdialer.NoReconcile}
	_, err := pathdialer.New(cfg)
	wantConfigError(t, err, `ReconcileByService["rset"]`, "", `"fix", "rest"`)

	cfg.ReconcileByService = map[string]pathdialer.ReconcileFunc{"rest": pathdialer.NoReconcile, "fix": pathdialer.NoReconcile}
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatalf("New with ReconcileByService naming the endpoints' services: %v", err)
	}
	_ = p.Close()
}

// A service on some endpoints only would have no address after a switch to
// one without it: refused at New, naming the endpoint and the service.
func TestNewRefusesServiceMissingOnAnEndpoint(t *testing.T) {
	cfg := validConfig()
	us := epUS
	us.Services = map[string]string{"rest": "https://api-us.broker.example"}
	cfg.Endpoints = []pathdialer.Endpoint{epEU, us}
	_, err := pathdialer.New(cfg)
	wantConfigError(t, err, "Endpoints[1].Services", "us", `"fix"`, `"eu"`)

	// The primary lacking it is refused alike.
	cfg.Endpoints = []pathdialer.Endpoint{{Name: "eu", Region: "eu", Primary: true, Services: map[string]string{"rest": "https://api-eu.broker.example"}}, epUS}
	_, err = pathdialer.New(cfg)
	wantConfigError(t, err, "Endpoints[0].Services", "eu", `"fix"`, `"us"`)
}

// A ws:// address to a host that is not loopback sends the handshake's
// credentials in the clear, as http:// would for REST: refused unless
// AllowPlaintext.
func TestPlaintextWSAddress(t *testing.T) {
	pair := func(a, b string) []pathdialer.Endpoint {
		return []pathdialer.Endpoint{
			{Name: "eu", Region: "eu", Primary: true, Services: map[string]string{"ws": a}},
			{Name: "us", Region: "us", Priority: 1, Services: map[string]string{"ws": b}},
		}
	}
	for _, tc := range []struct {
		name      string
		eps       []pathdialer.Endpoint
		allow, ok bool
		endpoint  string
	}{
		{"remote ws refused", pair("wss://eu.broker.example/ws", "ws://us.broker.example/ws"), false, false, "us"},
		{"remote ws by IP refused", pair("ws://203.0.113.7:8080/ws", "wss://us.broker.example/ws"), false, false, "eu"},
		{"remote ws with opt-in", pair("wss://eu.broker.example/ws", "ws://us.broker.example/ws"), true, true, ""},
		{"loopback ws", pair("ws://127.0.0.1:8080/ws", "ws://localhost:8081/ws"), false, true, ""},
		{"wss", pair("wss://eu.broker.example/ws", "wss://us.broker.example/ws"), false, true, ""},
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
			i := "0"
			if tc.endpoint == "us" {
				i = "1"
			}
			wantConfigError(t, err, `Endpoints[`+i+`].Services["ws"]`, tc.endpoint, "wss://", "AllowPlaintext")
		})
	}
}

// A "ws" address must say it is a WebSocket (ws:// or wss://): an https://
// URL there is most often the REST address given twice, whose handshake
// fails for ever.
func TestNewRefusesHTTPSAsWSAddress(t *testing.T) {
	cfg := validConfig()
	eu, us := epEU, epUS
	eu.Services = map[string]string{"rest": "https://api-eu.broker.example", "fix": "fix-eu.broker.example:9878", "ws": "wss://stream-eu.broker.example/ws"}
	us.Services = map[string]string{"rest": "https://api-us.broker.example", "fix": "fix-us.broker.example:9878", "ws": "https://api-us.broker.example"}
	cfg.Endpoints = []pathdialer.Endpoint{eu, us}
	_, err := pathdialer.New(cfg)
	wantConfigError(t, err, `Endpoints[1].Services["ws"]`, "us", "wss://")
}
