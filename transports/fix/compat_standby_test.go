package fix_test

// The hot standby (Options.Standby) against the compatibility suite's
// acceptors: a session per region with its own CompIDs, each region an
// executor acceptor in its own process that prints every message it gets.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/venue"
)

// The standby logs on to the backup's acceptor once and heartbeats there,
// sending no application message; when the primary's region is killed with an
// order in flight, the order is settled, and the next order goes over the
// standby session with no new logon, is filled, and nothing reaches either
// acceptor twice or as a resend.
func TestCompatHotStandbyTakesOverWithoutALogon(t *testing.T) {
	const hb = 1 // seconds: heartbeats are seen within the test
	var cs *compatSetup
	fallback := restFallback(t, func(id string) bool { return cs.booked(id) }) // the acceptors' book
	cs = compatWith(t, false, fix.ReconcileOptions{Fallback: fallback},
		fix.Options{Sequence: fix.SequenceResetOnLogon, Standby: &fix.Standby{Venue: venue.BinanceSpot()}}, hb)
	eu, us := cs.regions["eu"], cs.regions["us"]
	trading, standby := cs.sid.SenderCompID, cs.standby.SenderCompID
	t.Cleanup(func() {
		if t.Failed() {
			cs.dumpEvents(t)
		}
	})

	// Before the fault: an order addressed to the standby's session goes over
	// the active region's session; the standby only heartbeats.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cs.in.SendOrder(ctx, order("sb-pre", "FILL"), cs.standby); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "sb-pre answered", func() bool { return cs.in.Stats().Answered.Load() == 1 })
	eventually(t, 5*time.Second, "two heartbeats from the standby at us", func() bool { return len(us.adminFrom(standby, "0")) >= 2 })
	if got := eu.received("D"); !slices.Equal(got, []string{"D sb-pre false"}) {
		t.Errorf("eu received %v, want sb-pre once", got)
	}
	if got := eu.appFrom(standby); len(got) != 0 {
		t.Errorf("the standby's session sent to eu: %+v", got)
	}
	if got := us.appFrom(standby); len(got) != 0 {
		t.Errorf("the standby sent application messages before the switch: %+v", got)
	}
	if n := us.logonsOf(standby); n != 1 {
		t.Fatalf("standby logged on to us %d times before the fault, want 1", n)
	}

	killed := cs.killRegionWithOrderInFlight(t, "sb-inflight")
	// A refused connection takes eu down at once, so the switch, and its
	// reconcile's status request over the standby, can already be done here:
	// that question is the only application message the standby may have
	// sent by now (the events show it after the switch).
	before := slices.DeleteFunc(us.appFrom(standby), func(m appMsg) bool { return m.msgType == "H" && m.clOrdID == "sb-inflight" })
	s := cs.waitSettled(t, "sb-inflight")["sb-inflight"]
	if s.Fate != pathdialer.FateNotReceived || !strings.Contains(s.Detail, "REST 404") {
		t.Errorf("sb-inflight settled %v (%s), want NOT_RECEIVED by the REST fallback", s.Fate, s.Detail)
	}
	filled := cs.firstFillOnSurvivor(t, "sb")
	t.Logf("hot standby against the executor acceptors: region kill → first fill on the standby %v", filled.Sub(killed).Round(time.Millisecond))
	if d := filled.Sub(killed); d > 5*time.Second {
		t.Errorf("trading resumed %v after the kill, want < 5s", d)
	}

	if len(before) != 0 {
		t.Errorf("the standby sent application messages other than the reconcile's question by the kill: %+v", before)
	}
	if n := us.logonsOf(standby); n != 1 {
		t.Errorf("standby logged on to us %d times in all, want 1: the switch made a new logon", n)
	}
	if n := us.logonsOf(trading); n != 0 {
		t.Errorf("the primary's session logged on to us %d times, want 0 (the standby carries us)", n)
	}
	if n := eu.logonsOf(standby); n != 0 {
		t.Errorf("the standby's session logged on to eu %d times, want 0", n)
	}
	// After the switch the standby carried the reconcile's question about
	// the lost order (a read: repeated if its answer is slow) and the new
	// order, once, neither as a resend.
	var statusReqs, orders []string
	for _, m := range us.appFrom(standby) {
		switch l := fmt.Sprintf("%s %s %v", m.msgType, m.clOrdID, m.possDup); m.msgType {
		case "H":
			statusReqs = append(statusReqs, l)
		default:
			orders = append(orders, l)
		}
	}
	if len(statusReqs) == 0 || slices.ContainsFunc(statusReqs, func(l string) bool { return l != "H sb-inflight false" }) {
		t.Errorf("status requests from the standby at us: %v, want H sb-inflight", statusReqs)
	}
	if want := []string{"D sb-after false"}; !slices.Equal(orders, want) {
		t.Errorf("us received from the standby %v, want %v", orders, want)
	}
	if got := us.appFrom(trading); len(got) != 0 {
		t.Errorf("us received from the primary's session: %+v", got)
	}
	for _, comp := range []string{trading, standby} {
		for _, p := range cs.procs {
			for _, mt := range []string{"2", "4"} { // ResendRequest, SequenceReset
				if got := p.adminFrom(comp, mt); len(got) != 0 {
					t.Errorf("%s sent %d messages of type %s: %+v", comp, len(got), mt, got)
				}
			}
		}
	}
	for _, l := range eu.received("D") {
		if strings.HasPrefix(l, "D sb-inflight ") || strings.HasPrefix(l, "D sb-after ") {
			t.Errorf("eu received %s", l)
		}
	}
	cs.assertNoPossDup(t)
	assertOneUnsupportedEvent(t, cs)
}

// Against the same acceptors, NewInitiator refuses a standby for a venue
// profile that allows one session per identity, or does not say, before any
// session connects; a profile that allows it (deribit: sixteen sessions per
// API key) then gets both sessions logged on with the same CompIDs.
func TestCompatHotStandbyRefusedWhereTheVenueForbidsIt(t *testing.T) {
	cs := compatRegions(t, false, fix.ReconcileOptions{AcceptUndetermined: true})
	for _, p := range []venue.Profile{venue.CoinbaseExchangeFIX(), venue.IBKRClientPortal(), venue.KrakenSpot()} {
		err := cs.start(t, fix.Options{Sequence: fix.SequenceResetOnLogon, Standby: &fix.Standby{Venue: p}}, 30)
		if !errors.Is(err, fix.ErrInvalidOptions) || !strings.Contains(fmt.Sprint(err), p.Name+" does not allow a second live session") {
			t.Errorf("%s: err = %v, want ErrInvalidOptions naming the venue", p.Name, err)
		}
	}
	// Had a refused Initiator registered or started a session, this one
	// would be refused as a duplicate, or its session would log on twice.
	if err := cs.start(t, fix.Options{Sequence: fix.SequenceResetOnLogon, Standby: &fix.Standby{Venue: venue.Deribit()}}, 30); err != nil {
		t.Fatalf("deribit: %v", err)
	}
	eu, us := cs.regions["eu"], cs.regions["us"]
	// The acceptor may print its logon after answering it.
	eventually(t, 5*time.Second, "both logons printed", func() bool {
		return eu.logonsOf(cs.sid.SenderCompID) >= 1 && us.logonsOf(cs.standby.SenderCompID) >= 1
	})
	if a, b, c, d := eu.logonsOf(cs.sid.SenderCompID), us.logonsOf(cs.standby.SenderCompID), us.logonsOf(cs.sid.SenderCompID), eu.logonsOf(cs.standby.SenderCompID); a != 1 || b != 1 || c != 0 || d != 0 {
		t.Errorf("logons: trading at eu %d, standby at us %d, trading at us %d, standby at eu %d; want 1, 1, 0, 0", a, b, c, d)
	}
}
