package fix_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

func idlePath(t *testing.T, fixAddr string) *pathdialer.Path {
	t.Helper()
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Primary: true, Services: map[string]string{"fix": fixAddr}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"fix": fixAddr}},
	}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestNewInitiatorRefusesWhatCannotWork(t *testing.T) {
	path := idlePath(t, "127.0.0.1:1")
	good := fix.Options{Sequence: fix.SequenceContinue}
	cases := []struct {
		name  string
		begin string
		set   map[string]string
		opts  fix.Options
	}{
		{"no sequence model", "FIX.4.4", nil, fix.Options{}},
		{"insecure TLS", "FIX.4.4", nil, fix.Options{Sequence: fix.SequenceContinue, TLSConfig: &tls.Config{InsecureSkipVerify: true}}},
		{"reconnect too slow", "FIX.4.4", nil, fix.Options{Sequence: fix.SequenceContinue, ReconnectInterval: time.Minute}},
		{"quickfix TLS", "FIX.4.4", map[string]string{"SocketUseSSL": "Y"}, good},
		{"quickfix server name", "FIX.4.4", map[string]string{"SocketServerName": "fix.broker.example"}, good},
		{"SOCKS proxy", "FIX.4.4", map[string]string{"ProxyType": "socks"}, good},
		{"ResetOnLogon", "FIX.4.4", map[string]string{"ResetOnLogon": "Y"}, good},
		{"ResetOnDisconnect", "FIX.4.4", map[string]string{"ResetOnDisconnect": "Y"}, good},
		{"FIX.4.1", "FIX.4.1", nil, good},
		{"SocketConnectHost", "FIX.4.4", map[string]string{"SocketConnectHost": "203.0.113.7"}, good},
		{"SocketConnectPort", "FIX.4.4", map[string]string{"SocketConnectPort": "9876"}, good},
		{"SocketConnectHost1", "FIX.4.4", map[string]string{"SocketConnectHost1": "203.0.113.8", "SocketConnectPort1": "9877"}, good},
		{"MaxMessageSize negative", "FIX.4.4", nil, fix.Options{Sequence: fix.SequenceContinue, MaxMessageSize: -1}},
		{"MaxMessageSize too small", "FIX.4.4", nil, fix.Options{Sequence: fix.SequenceContinue, MaxMessageSize: 100}},
		{"MaxMessageSize too large", "FIX.4.4", nil, fix.Options{Sequence: fix.SequenceContinue, MaxMessageSize: 1 << 30}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := quickfix.NewSettings()
			s := quickfix.NewSessionSettings()
			s.Set("BeginString", tc.begin)
			s.Set("SenderCompID", uniq("V"))
			s.Set("TargetCompID", "BROKER")
			s.Set("HeartBtInt", "30")
			for k, v := range tc.set {
				s.Set(k, v)
			}
			if _, err := st.AddSession(s); err != nil {
				t.Fatal(err)
			}
			in, err := fix.NewInitiator(nopApp{}, quickfix.NewMemoryStoreFactory(), st, quickfix.NewNullLogFactory(), path, tc.opts)
			if err == nil {
				_ = in.Close()
				t.Fatal("accepted")
			}
			if !errors.Is(err, fix.ErrInvalidOptions) {
				t.Fatalf("err = %v, want ErrInvalidOptions", err)
			}
			if tc.opts.MaxMessageSize != 0 && !strings.Contains(err.Error(), "MaxMessageSize") {
				t.Fatalf("err = %v, does not name MaxMessageSize", err)
			}
			if strings.HasPrefix(tc.name, "SocketConnect") && (!strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), "ReplaceSocketConnect")) {
				t.Fatalf("err = %v, does not name %s and the opt-in Options.ReplaceSocketConnect", err, tc.name)
			}
		})
	}
	if _, err := fix.NewInitiator(nopApp{}, quickfix.NewMemoryStoreFactory(), quickfix.NewSettings(), quickfix.NewNullLogFactory(), path, good); !errors.Is(err, fix.ErrInvalidOptions) {
		t.Fatalf("no sessions: %v", err)
	}
	if _, err := fix.NewInitiator(nopApp{}, quickfix.NewMemoryStoreFactory(), nil, quickfix.NewNullLogFactory(), nil, good); !errors.Is(err, fix.ErrInvalidOptions) {
		t.Fatalf("nil path: %v", err)
	}
}

// With Options.ReplaceSocketConnect, the user's own addresses and
// ReconnectInterval are overridden: the session still reaches the broker
// through the relay, and the user's settings are left as they were.
func TestSettingsAddressesAreRewritten(t *testing.T) {
	var user *quickfix.SessionSettings
	h := newHarness(t, harnessOpts{opts: fix.Options{ReplaceSocketConnect: true}, settings: func(s *quickfix.SessionSettings) {
		s.Set("SocketConnectHost", "203.0.113.7")
		s.Set("SocketConnectPort", "9876")
		s.Set("SocketConnectHost1", "203.0.113.8")
		s.Set("SocketConnectPort1", "9877")
		s.Set("ReconnectInterval", "30")
		user = s
	}})
	if ep, ok := h.in.LoggedOn(h.sid); !ok || ep != "eu" {
		t.Fatalf("LoggedOn = %q, %v", ep, ok)
	}
	if v, _ := user.Setting("SocketConnectHost"); v != "203.0.113.7" {
		t.Fatalf("user settings modified: SocketConnectHost = %q", v)
	}
}

func TestFateOf(t *testing.T) {
	er := func(status, rej string) *quickfix.Message {
		m := quickfix.NewMessage()
		m.Header.SetString(35, "8")
		m.Body.SetString(11, "c1")
		if status != "" {
			m.Body.SetString(39, status)
		}
		if rej != "" {
			m.Body.SetString(103, rej)
		}
		return m
	}
	bmr := func(reason string) *quickfix.Message {
		m := quickfix.NewMessage()
		m.Header.SetString(35, "j")
		m.Body.SetString(45, "7")
		m.Body.SetString(372, "H")
		if reason != "" {
			m.Body.SetString(380, reason)
		}
		return m
	}
	sessionReject := quickfix.NewMessage()
	sessionReject.Header.SetString(35, "3")
	sessionReject.Body.SetString(373, "11")
	cases := []struct {
		msg  *quickfix.Message
		want pathdialer.Fate
	}{
		{er("0", ""), pathdialer.FateResting},
		{er("1", ""), pathdialer.FateResting},
		{er("A", ""), pathdialer.FateResting},
		{er("2", ""), pathdialer.FateFilled},
		{er("4", ""), pathdialer.FateCanceled},
		{er("C", ""), pathdialer.FateCanceled},
		{er("8", ""), pathdialer.FateRejected},
		{er("8", "5"), pathdialer.FateNotReceived},
		{er("", ""), pathdialer.FateUndetermined},
		{er("Z", ""), pathdialer.FateUndetermined},
		{bmr("1"), pathdialer.FateNotReceived},  // unknown ID
		{bmr("3"), pathdialer.FateUndetermined}, // unsupported message type: no verdict
		{bmr("4"), pathdialer.FateUndetermined}, // application not available
		{bmr("0"), pathdialer.FateUndetermined},
		{bmr(""), pathdialer.FateUndetermined},
		{sessionReject, pathdialer.FateUndetermined},
	}
	for i, tc := range cases {
		if got, detail := fix.FateOf(tc.msg); got != tc.want {
			t.Errorf("case %d: FateOf = %v (%s), want %v", i, got, detail, tc.want)
		}
	}
	for mt, want := range map[string]bool{"D": true, "F": true, "G": true, "AB": true, "AC": true, "H": false, "8": false, "V": false} {
		if fix.IsOrder(mt) != want {
			t.Errorf("IsOrder(%q) != %v", mt, want)
		}
	}
}
