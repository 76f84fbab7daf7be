package main

import (
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/venue"
)

// The late-landing figure counts from when the venue's lookups could first
// show the booking (booking + lookup lag), over the landings booked while
// their verdict was provisional: a landing after a final verdict or never
// reported after its booking is not in it, and one reported before its
// lookups could show it counts as 0.
func TestLateReportCountsFromWhenLookupsShowTheBooking(t *testing.T) {
	const lag = 15 * time.Second
	s := func(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }
	lands := []orderflow.LateLanding{
		{Order: "a", BookedAt: s(50), ReportedAt: s(70.4), Reported: true},                  // 5.4 s after it could be seen
		{Order: "b", BookedAt: s(60), ReportedAt: s(76), Reported: true},                    // 1 s
		{Order: "c", BookedAt: s(60), ReportedAt: s(200), Reported: true, AfterFinal: true}, // an alarm, not the target's
		{Order: "d", BookedAt: s(60), Reported: true},                                       // told before its booking
		{Order: "e", BookedAt: s(60), ReportedAt: s(61), Reported: true},                    // an execution report: 0
	}
	got, n := lateReport(lands, lag, nil)
	if got != s(5.4) || n != 3 {
		t.Fatalf("lateReport = %v over %d, want 5.4s over 3", got, n)
	}
	// The Path made a's NOT_RECEIVED final before its lookups could show
	// the booking: the watch's alarm, not the target's.
	got, n = lateReport(lands, lag, func(o string) bool { return o == "a" })
	if got != s(1) || n != 2 {
		t.Fatalf("lateReport without the Path's alarm = %v over %d, want 1s over 2", got, n)
	}
	if got, n := lateReport(lands[2:4], lag, nil); got != 0 || n != 0 {
		t.Fatalf("lateReport of an alarm and an early verdict = %v over %d, want none", got, n)
	}
	r := VenueRow{LateTarget: s(10.2)}
	if w := lateWithin(r); w != "– (10.2s)" {
		t.Errorf("lateWithin without a measured landing = %q", w)
	}
	r.LateReportMax, r.LateMeasured = 0, 1
	if w := lateWithin(r); w != "0s (10.2s)" {
		t.Errorf("lateWithin of a landing reported at once = %q", w)
	}
}

// The target is MaxCopyHold plus one budgeted call: one lookup interval,
// or a listing's requests of them. Kraken's Starter budget (one call per
// 3 s, a quarter of it for lookups) is a 12 s interval: 10 s + 12 s for the
// demo client's one-request listing, 10 s + 24 s for the REST preset's two
// listings (rest.KrakenSpotOrderListing).
func TestLateTargetIsCopyHoldPlusOneBudgetedCall(t *testing.T) {
	k, err := venue.ByName("kraken-spot")
	if err != nil {
		t.Fatal(err)
	}
	if got := lateTarget(10*time.Second, k, 1); got != 22*time.Second {
		t.Errorf("kraken-spot, one request a listing: %v, want 22s", got)
	}
	if got := lateTarget(10*time.Second, k, 2); got != 34*time.Second {
		t.Errorf("kraken-spot, two requests a listing: %v, want 34s", got)
	}
	if got := lateTarget(10*time.Second, k, 0); got != 22*time.Second {
		t.Errorf("kraken-spot, lookups: %v, want 22s", got)
	}
	var b strings.Builder
	WriteVenueTable(&b, []VenueRow{{Venue: "kraken-spot", LateTarget: 22 * time.Second, LateReportMax: 3 * time.Second, LateMeasured: 2, Result: "OK"}})
	if !strings.Contains(b.String(), "from when lookups show it") || !strings.Contains(b.String(), "3s (22s)") {
		t.Errorf("venue table:\n%s", b.String())
	}
}
