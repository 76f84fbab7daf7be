package orderflow

import (
	"context"
	"testing"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// A re-sent FIX order's ExecutionReport can arrive before placeFIX marks the
// re-send's attempt sent (SendOrder has not returned yet): the order is booked
// where the session is logged on now, not where the first attempt (found
// NOT_RECEIVED) went.
func TestFIXBookedRegionOfAResendAnsweredBeforeItIsMarkedSent(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    OrderRecord
		via  string
		want string
	}{
		{
			name: "re-send answered before it is marked sent",
			r: OrderRecord{Resent: 1, resending: true, Settled: true, Attempts: []Attempt{
				{Sent: true, Endpoint: "eu"},
				{Resend: true}, // SendOrder wrote it; placeFIX has not marked it yet
			}},
			via: "us", want: "us",
		},
		{
			name: "re-send marked sent",
			r: OrderRecord{Resent: 1, Attempts: []Attempt{
				{Sent: true, Endpoint: "eu"},
				{Resend: true, Sent: true, Endpoint: "us"},
			}},
			via: "us", want: "us",
		},
		{
			// The broker resends missed ExecutionReports after a logon
			// through the new region: booked where it was sent.
			name: "late answer of the first send over the new region",
			r:    OrderRecord{Attempts: []Attempt{{Sent: true, Endpoint: "eu"}}},
			via:  "us", want: "eu",
		},
		{
			// A re-send refused before it left: an answer is the first send's.
			name: "re-send that did not leave",
			r: OrderRecord{Resent: 1, NotSent: "trading halted", Attempts: []Attempt{
				{Sent: true, Endpoint: "eu"},
				{Resend: true},
			}},
			via: "us", want: "eu",
		},
		{
			name: "first send answered before it is marked sent",
			r:    OrderRecord{Attempts: []Attempt{{}}},
			via:  "eu", want: "eu",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bookedEndpoint(&tc.r, tc.via); got != tc.want {
				t.Fatalf("booked through %q, want %q", got, tc.want)
			}
		})
	}
}

// A FIX session that drops and logs on again with no switch may have had
// its open orders cancelled by the broker's cancel-on-disconnect, and no
// release follows (no hold, no fence: neither the Path nor the release's
// reconcile reads the open orders): the re-logon asks for the client's
// open-order reconcile. The first logon does not.
func TestFIXReLogonAfterADropAsksForTheOpenOrderReconcile(t *testing.T) {
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"fix": "127.0.0.1:1"}}, {Name: "us", Region: "us", Priority: 1, Services: map[string]string{"fix": "127.0.0.1:2"}}}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := &Client{path: p, rec: NewRecorder()}
	kick := make(chan string, 1)
	c.rst.kick = kick
	a := newFIXApp(c)
	sid := quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: "C", TargetCompID: "B"}
	a.OnLogon(sid)
	select {
	case ep := <-kick:
		t.Fatalf("the first logon asked for an open-order reconcile on %q", ep)
	default:
	}
	a.OnLogout(sid)
	a.OnLogon(sid)
	select {
	case ep := <-kick:
		if ep != "eu" {
			t.Fatalf("open-order reconcile asked on %q, want eu (where the session is logged on)", ep)
		}
	default:
		t.Fatal("the session logged on again after a drop and no open-order reconcile was asked for")
	}
}

// A session cut by the fault that made the Path switch may be seen to end
// after the switch (the switch came first, the logout a few milliseconds
// later): the Path reads the open orders after that switch's fence, so the
// re-logon on the new endpoint must not ask the client to read them first —
// a read by the client would take the cancels from the switch that caused
// them. Only a drop with no switch since the session's last logon asks.
func TestFIXReLogonAfterASwitchLeavesTheOpenOrderReadToThePath(t *testing.T) {
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{{Name: "eu", Region: "eu", Priority: 0, Primary: true, Services: map[string]string{"fix": "127.0.0.1:1"}}, {Name: "us", Region: "us", Priority: 1, Services: map[string]string{"fix": "127.0.0.1:2"}}}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return nil }
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	cfg.ExternalDecisions = true
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Assign(ctx, "eu", 1); err != nil {
		t.Fatal(err)
	}
	c := &Client{path: p, rec: NewRecorder()}
	kick := make(chan string, 1)
	c.rst.kick = kick
	a := newFIXApp(c)
	sid := quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: "C", TargetCompID: "B"}
	a.OnLogon(sid)
	if err := p.Assign(ctx, "us", 2); err != nil { // the switch the fault caused
		t.Fatal(err)
	}
	a.OnLogout(sid) // the cut session seen to end after the switch
	a.OnLogon(sid)  // logged on through us
	select {
	case ep := <-kick:
		t.Fatalf("the re-logon after a switch asked the client for an open-order reconcile on %q: the switch's own read must report its cancels", ep)
	default:
	}
	a.OnLogout(sid) // a drop with no switch since that logon still asks
	a.OnLogon(sid)
	select {
	case <-kick:
	default:
		t.Fatal("a drop with no switch since the last logon asked for no open-order reconcile")
	}
}
