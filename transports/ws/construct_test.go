package ws_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// newPath builds (does not start) a Path over two endpoints with the given
// services.
func newPath(t *testing.T, eu, us map[string]string) *pathdialer.Path {
	t.Helper()
	cfg := pathtest.FastConfig([]pathdialer.Endpoint{
		{Name: "eu", Region: "eu", Primary: true, Services: eu},
		{Name: "us", Region: "us", Priority: 1, Services: us},
	}, pathtest.NewProbes("eu", "us"))
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func streamConfig() ws.StreamConfig {
	cfg := ws.DefaultStreamConfig()
	cfg.Streams = []string{"px.EURUSD"}
	cfg.Handler = func(ws.Message) {}
	return cfg
}

func wantStreamRefused(t *testing.T, err error, want ...string) {
	t.Helper()
	if !errors.Is(err, ws.ErrInvalidConfig) {
		t.Fatalf("NewStream = %v, want ErrInvalidConfig", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("NewStream = %v, want the text to hold %q", err, w)
		}
	}
}

// A stream on a Path whose endpoints have no "ws" address could never
// connect: NewStream refuses it instead of a stream CONNECTING for ever.
func TestNewStreamRefusesPathWithoutWSAddress(t *testing.T) {
	p := newPath(t, map[string]string{"rest": "https://api-eu.broker.example"}, map[string]string{"rest": "https://api-us.broker.example"})
	_, err := ws.NewStream(p, streamConfig())
	wantStreamRefused(t, err, `"eu"`, `Services["ws"]`)
}

// A wss address to a host no public CA certifies (loopback, a private
// address, a name without a dot) needs the CA that signed its certificate:
// without RootCAs every handshake fails verification, for ever.
func TestNewStreamRefusesPrivateWSSWithoutCA(t *testing.T) {
	for _, addr := range []string{"wss://127.0.0.1:8443/ws", "wss://localhost:8443/ws", "wss://10.1.2.3/ws", "wss://[::1]:8443/ws", "wss://md-gateway:8443/ws"} {
		p := newPath(t, map[string]string{"ws": addr}, map[string]string{"ws": addr})
		for name, d := range map[string]*websocket.Dialer{"nil dialer": nil, "no TLS config": {}, "no RootCAs": {TLSClientConfig: &tls.Config{ServerName: "x"}}} {
			cfg := streamConfig()
			cfg.Dialer = d
			_, err := ws.NewStream(p, cfg)
			if err == nil {
				t.Fatalf("%s, %s: NewStream accepted a private wss address without a CA", addr, name)
			}
			wantStreamRefused(t, err, `"eu"`, "Dialer.TLSClientConfig.RootCAs")
		}
		cfg := streamConfig()
		cfg.Dialer = &websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}}
		s, err := ws.NewStream(p, cfg)
		if err != nil {
			t.Fatalf("%s with RootCAs: %v", addr, err)
		}
		_ = s.Close()
	}
	// A public name, and plain ws to loopback, need nothing.
	for _, addr := range []string{"wss://stream.broker.example/ws", "ws://127.0.0.1:8080/ws"} {
		p := newPath(t, map[string]string{"ws": addr}, map[string]string{"ws": addr})
		s, err := ws.NewStream(p, streamConfig())
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		_ = s.Close()
	}
}

// The zero StreamConfig points to DefaultStreamConfig, as pathdialer's zero
// Config points to DefaultConfig.
func TestZeroStreamConfigPointsToDefaultStreamConfig(t *testing.T) {
	for name, cfg := range map[string]ws.StreamConfig{
		"zero value":               {},
		"only Streams and Handler": {Streams: []string{"px.EURUSD"}, Handler: func(ws.Message) {}},
	} {
		err := cfg.Validate()
		if !errors.Is(err, ws.ErrInvalidConfig) || !strings.Contains(err.Error(), "DefaultStreamConfig()") {
			t.Fatalf("%s: Validate = %v, want ErrInvalidConfig pointing to DefaultStreamConfig()", name, err)
		}
	}
}

// NewStream's refusals are *pathdialer.ConfigError with ws.ErrInvalidConfig
// as Kind: the field (and the endpoint) can be read without parsing text.
func TestStreamConfigErrorsAreTyped(t *testing.T) {
	private := newPath(t, map[string]string{"ws": "wss://127.0.0.1:8443/ws"}, map[string]string{"ws": "wss://127.0.0.1:8444/ws"})
	noWS := newPath(t, map[string]string{"rest": "https://api-eu.broker.example"}, map[string]string{"rest": "https://api-us.broker.example"})
	queue := streamConfig()
	queue.QueueLength = 5000
	for _, tc := range []struct {
		name            string
		path            *pathdialer.Path
		cfg             ws.StreamConfig
		field, endpoint string
	}{
		{"queue length", private, queue, "QueueLength", ""},
		{"no CA", private, streamConfig(), "Dialer.TLSClientConfig.RootCAs", "eu"},
		{"no ws address", noWS, streamConfig(), `Endpoints[0].Services["ws"]`, "eu"},
	} {
		_, err := ws.NewStream(tc.path, tc.cfg)
		var ce *pathdialer.ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ws.ErrInvalidConfig) || errors.Is(err, pathdialer.ErrInvalidConfig) {
			t.Fatalf("%s: NewStream = %v (%T), want a *pathdialer.ConfigError matching ws.ErrInvalidConfig only", tc.name, err, err)
		}
		if ce.Field != tc.field || ce.Endpoint != tc.endpoint {
			t.Fatalf("%s: ConfigError{Field: %q, Endpoint: %q}, want {%q, %q}", tc.name, ce.Field, ce.Endpoint, tc.field, tc.endpoint)
		}
		if !strings.HasPrefix(err.Error(), "ws: invalid stream config: ") {
			t.Fatalf("%s: %q does not begin with ws.ErrInvalidConfig's text", tc.name, err)
		}
	}
}
