package simbroker

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestStartIsFastAndCloseCleansUp(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.APIKey = ""
	cfg.TickInterval = 5 * time.Millisecond
	start := time.Now()
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Start took %v, want well under a second", d)
	}
	if k := b.APIKey(); !strings.HasPrefix(k, "sim-") || len(k) < 20 {
		t.Errorf("generated APIKey %q", k)
	}
	if _, err := os.Stat(b.CAFile()); err != nil {
		t.Fatalf("CA file: %v", err)
	}
	if !strings.Contains(string(b.CACertPEM()), "BEGIN CERTIFICATE") {
		t.Fatal("CACertPEM is not PEM")
	}
	ports := map[string]bool{}
	for _, rg := range b.Regions() {
		for _, s := range Services {
			a := rg.Addr(s)
			if !strings.HasPrefix(a, "127.0.0.1:") || ports[a] {
				t.Fatalf("%s/%s address %q (duplicate or not loopback)", rg.Name(), s, a)
			}
			ports[a] = true
		}
	}
	if !strings.HasPrefix(b.Region("eu").WSURL(), "wss://127.0.0.1:") || !strings.HasSuffix(b.Region("eu").WSURL(), "/ws") {
		t.Fatalf("WSURL %s", b.Region("eu").WSURL())
	}
	// The ticker publishes on its own.
	waitFor(t, "ticker to publish", func() bool {
		h, _ := b.Region("us").StreamHead("px.GBPUSD")
		return h >= 2
	})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(b.CAFile()); !os.IsNotExist(err) {
		t.Fatalf("CA file still there after Close: %v", err)
	}
	if _, err := b.PublishTick("px.EURUSD"); !errors.Is(err, ErrClosed) {
		t.Fatalf("PublishTick after Close = %v", err)
	}
	if err := b.SetFault("eu", REST, Down{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetFault after Close = %v", err)
	}
}

func TestSecondBrokerWithSameCompIDsIsRefused(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	cfg := testConfig()
	cfg.ClientCompID, cfg.BrokerCompID = b.cfg.ClientCompID, b.cfg.BrokerCompID
	b2, err := Start(context.Background(), cfg)
	if !errors.Is(err, ErrFIXSessionInUse) {
		if b2 != nil {
			_ = b2.Close()
		}
		t.Fatalf("second Start = %v, want ErrFIXSessionInUse", err)
	}
	// After Close the session ID is free again.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b3, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start after Close: %v", err)
	}
	_ = b3.Close()
}

func TestSetFaultRefusesWhatCannotApply(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	cases := []struct {
		region string
		svc    Service
		f      Fault
		want   error
	}{
		{"mars", REST, Down{}, ErrUnknownRegion},
		{"eu", "smtp", Down{}, ErrUnknownService},
		{"eu", FIX, Fault503{N: 1}, ErrFaultNotSupported},
		{"eu", Probe, Partial{}, ErrFaultNotSupported},
		{"eu", WS, UnknownOutcome{N: 1}, ErrFaultNotSupported},
		{"eu", REST, UnknownOutcome{}, ErrInvalidFault},
		{"eu", WS, BookingDelay{Delay: time.Millisecond}, ErrFaultNotSupported},
		{"eu", REST, BookingDelay{Delay: -1}, ErrInvalidFault},
		{"eu", REST, Fault503{}, ErrInvalidFault},
		{"eu", REST, Latency{Delay: -1}, ErrInvalidFault},
		{"eu", REST, Flap{}, ErrInvalidFault},
		{"eu", REST, Flap{Period: time.Second, Fault: Partial{}}, ErrInvalidFault},
		{"eu", REST, nil, ErrInvalidFault},
	}
	for _, tc := range cases {
		if err := b.SetFault(tc.region, tc.svc, tc.f); !errors.Is(err, tc.want) {
			t.Errorf("SetFault(%s, %s, %v) = %v, want %v", tc.region, tc.svc, tc.f, err, tc.want)
		}
	}
	if f := b.Faults(); len(f["eu"]) != 0 {
		t.Fatalf("refused faults changed state: %v", f)
	}
	if err := b.SetFault("us", FIX, Latency{Delay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetFault("us", REST, Fault503{N: 3}); err != nil {
		t.Fatal(err)
	}
	f := b.Faults()["us"]
	if len(f[FIX]) != 1 || !strings.HasPrefix(f[FIX][0], "latency") || len(f[REST]) != 1 || f[REST][0] != "503(n=3)" {
		t.Fatalf("Faults = %v", f)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"one region", func(c *Config) { c.Regions = []string{"eu"} }, "Regions"},
		{"dup region", func(c *Config) { c.Regions = []string{"eu", "eu"} }, "Regions"},
		{"bad region", func(c *Config) { c.Regions = []string{"eu", "US East"} }, "Regions"},
		{"short key", func(c *Config) { c.APIKey = "abc" }, "APIKey"},
		{"no account", func(c *Config) { c.AccountID = "" }, "AccountID"},
		{"same compids", func(c *Config) { c.ClientCompID = c.BrokerCompID }, "CompID"},
		{"bad compid", func(c *Config) { c.BrokerCompID = "a b" }, "BrokerCompID"},
		{"no streams", func(c *Config) { c.Streams = nil }, "Streams"},
		{"negative tick", func(c *Config) { c.TickInterval = -1 }, "TickInterval"},
		{"zero buffer", func(c *Config) { c.ReplayBuffer = 0 }, "ReplayBuffer"},
		{"lag unknown region", func(c *Config) { c.ReplicationLag = map[string]time.Duration{"ap": 1} }, "ReplicationLag"},
		{"negative lag", func(c *Config) { c.ReplicationLag = map[string]time.Duration{"us": -1} }, "ReplicationLag"},
		{"negative budget", func(c *Config) { c.HandshakesPerSecond = -1 }, "HandshakesPerSecond"},
		{"zero ping", func(c *Config) { c.PingInterval = 0 }, "PingInterval"},
		{"bad policy", func(c *Config) { c.SessionPolicy = 9 }, "SessionPolicy"},
		{"zero fence timeout", func(c *Config) { c.FenceTimeout = 0 }, "FenceTimeout"},
	}
	for _, tc := range cases {
		cfg := DefaultConfig()
		tc.mutate(&cfg)
		_, err := Start(context.Background(), cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: Start = %v; want ErrInvalidConfig naming %s", tc.name, err, tc.field)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	for in, want := range map[string]SessionPolicy{"concurrent": SessionsConcurrent, "one-per-credential": SessionOnePerCredential, "One": SessionOnePerCredential} {
		if got, err := ParseSessionPolicy(in); err != nil || got != want {
			t.Errorf("ParseSessionPolicy(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseSessionPolicy("both"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("ParseSessionPolicy(both) = %v", err)
	}
	if _, err := ParseService("FIX"); err != nil {
		t.Errorf("ParseService(FIX) = %v", err)
	}
}
