package dst

import (
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

func hasViolation(res *Result, inv string) string {
	for _, v := range res.Violations {
		if strings.Contains(v, inv) {
			return v
		}
	}
	return ""
}

// The pause model is not vacuous: over the first 100 seeds, coordinated
// seeds pause, leases expire at the coordinator, the Path refuses orders
// on its own (ErrTicketExpired), a broker that checks tokens rejects a write
// paused past Ticket.Valid, one that does not books it (a note, not a
// violation), and every invariant holds.
func TestSimPausesExercised(t *testing.T) {
	var coord, pauses, lapses, expired, stale, lapsedBooked int
	for seed := uint64(1); seed <= 100; seed++ {
		if !NewScenario(seed).Coordinated {
			continue
		}
		coord++
		res := runSeed(t, seed, Options{})
		for _, v := range res.Violations {
			t.Errorf("seed %d: %s\nreplay: %s", seed, v, replayCommand(seed))
		}
		st := res.Stats
		pauses += st.Pauses
		lapses += st.Lapses
		expired += st.Expired
		stale += st.StaleRejected
		lapsedBooked += st.LapsedBookings
		if st.LapsedBookings > 0 && res.Scenario.Tokens == simbroker.TokensChecked {
			t.Errorf("seed %d: %d bookings on a lapsed lease with tokens checked", seed, st.LapsedBookings)
		}
	}
	t.Logf("%d coordinated seeds of 100: %d pauses, %d leases expired, %d orders refused with ErrTicketExpired, %d stale tokens rejected, %d booked on a lapsed lease (tokens unchecked)",
		coord, pauses, lapses, expired, stale, lapsedBooked)
	if coord == 0 || pauses == 0 || lapses == 0 || expired == 0 || stale == 0 || lapsedBooked == 0 {
		t.Fatal("the pause model was not exercised: every count above must be positive")
	}
}

// no-order-after-lease-lapsed has teeth: a follower that, on resuming after
// its lease expired, extends the decision instead of halting and
// re-assigning under a new token lets orders reach the broker under the
// lapsed token; a sweep finds such a seed, and the same seed passes with
// the real follower.
func TestSimExtendOnResumeFindsLapsedOrder(t *testing.T) {
	findPlanted(t, "a follower that extends on resume", "no order after a lapsed lease",
		func(s Scenario) bool { return s.Coordinated }, Options{ExtendOnResume: true}, InvLeaseLapsed, nil)
}

// The Path's own deadline is what stops orders between the end of a pause
// and the follower's Halt: with a follower that never calls Path.Extend
// (the Path's decisions then never expire) and resumes after the traders,
// their orders reach the broker under the lapsed token. A sweep finds such
// a seed; the same seed passes with the real follower.
func TestSimNoExtendFindsLapsedOrder(t *testing.T) {
	findPlanted(t, "a follower that never extends", "no order after a lapsed lease",
		func(s Scenario) bool { return s.Coordinated && s.FollowerLast }, Options{NoExtend: true}, InvLeaseLapsed,
		func(clean *Result) {
			if clean.Stats.Expired == 0 {
				t.Fatalf("the Path refused no order with ErrTicketExpired: %+v", clean.Stats)
			}
		})
}

// stale-token-rejected has teeth: against a broker that claims to check
// fencing tokens and does not, a write paused between Ticket.Valid and its
// bytes across a lease expiry is booked under the lapsed token; a sweep
// finds such a seed, and the same seed passes against the real broker, which
// rejects that write.
func TestSimBrokerIgnoringTokensFindsStaleBooking(t *testing.T) {
	findPlanted(t, "a broker that ignores tokens", "no stale booking",
		func(s Scenario) bool { return s.Coordinated && s.Tokens == simbroker.TokensChecked },
		Options{BrokerIgnoresTokens: true}, InvStaleToken,
		func(clean *Result) {
			if clean.Stats.StaleRejected == 0 {
				t.Fatalf("the real broker rejected no stale token: %+v", clean.Stats)
			}
		})
}

// findPlanted sweeps seeds 1–300 that match for one that breaks invariant
// inv with the planted defect, then runs that seed without it: it must pass,
// and check (when set) asserts what the real part did instead.
func findPlanted(t *testing.T, defect, want string, match func(Scenario) bool, planted Options, inv string, check func(clean *Result)) {
	t.Helper()
	for seed := uint64(1); seed <= 300; seed++ {
		if !match(NewScenario(seed)) {
			continue
		}
		res := runSeed(t, seed, planted)
		v := hasViolation(res, inv)
		if v == "" {
			continue
		}
		t.Logf("seed %d (tokens %s): %s", seed, res.Scenario.Tokens, v)
		clean := runSeed(t, seed, Options{})
		if len(clean.Violations) > 0 {
			t.Fatalf("seed %d fails without %s too: %v", seed, defect, clean.Violations)
		}
		if check != nil {
			check(clean)
		}
		return
	}
	t.Fatalf("300 seeds with %s found %s violated", defect, want)
}
