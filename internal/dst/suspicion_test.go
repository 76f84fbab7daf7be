package dst

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The refused-region move of suspicion: the primary starts refusing (its
// listeners closed, its connections reset) while one trader places an order
// every 200 ms and rounds come every 400 ms. The first order that fails there
// brings the probe forward; the probe, refused too, is repeated at once while
// the orders fail, so the primary is DOWN, and the flow switched, within a
// few round trips of that order: before the trader's next order (200 ms) and
// before the next round. The invariant, besides every other of the run:
//
//	refused-found-by-first-failed-order  the switch away from the primary comes within
//	                                      suspicionSwitchBound of the first order that
//	                                      failed there after the fault
func TestSimSuspicionRefusedRegion(t *testing.T) {
	sweepBuilt(t, "refused-found-by-first-failed-order", refusedScenario, checkRefusedFoundByFirstFailedOrder)
}

// suspicionSwitchBound: well above a few simulated round trips (base latency
// at most 2 ms one way), well below the trader's next order and the next round.
const suspicionSwitchBound = 40 * time.Millisecond

// refusedScenario is seed's world and settings with one trader, an order every
// 200 ms, rounds every 400 ms (timeout 200 ms), DOWN after 2 or 3 failures, and
// one fault: the primary refuses from 2 s for 2 s. No coordinator, pauses or
// composed moves: the switch is the Path's own.
func refusedScenario(seed uint64) Scenario {
	s := NewScenario(seed)
	s.Coordinated, s.Pauses, s.FollowerLast, s.Moves = false, nil, false, nil
	s.Traders, s.OrderEvery = 1, 200*time.Millisecond
	s.ProbeInterval, s.ProbeTimeout = 400*time.Millisecond, 200*time.Millisecond
	s.FailureThreshold = 2 + int(seed%2)
	s.MaxHealthAge = 4 * s.ProbeInterval
	s.OrderTimeout = time.Second
	s.Duration = 6 * time.Second
	s.Faults = []ScheduledFault{{At: 2 * time.Second, For: 2 * time.Second, Region: s.Regions[0], Kind: FaultDown}}
	return s
}

var traceFailed = regexp.MustCompile(`^order \S+ (not-sent|unknown|failed|rejected)`)

// checkRefusedFoundByFirstFailedOrder reads the trace: the first order that
// failed after the fault, and the first switch away from the primary after
// it; it returns a violation, or "".
func checkRefusedFoundByFirstFailedOrder(res *Result) string {
	s := res.Scenario
	f := s.Faults[0]
	var firstFail, sw time.Duration = -1, -1
	traceFrom(res, f.At, func(at time.Duration, text string) bool {
		if firstFail < 0 && traceFailed.MatchString(text) {
			firstFail = at
		}
		if firstFail >= 0 && strings.HasPrefix(text, fmt.Sprintf("path switch %s->", f.Region)) {
			sw = at
			return false
		}
		return true
	})
	switch {
	case firstFail < 0:
		return "no order failed on the refusing primary (the run proves nothing)"
	case sw < 0:
		return fmt.Sprintf("no switch away from %s after the first failed order at %v", f.Region, firstFail)
	case sw-firstFail > suspicionSwitchBound:
		return fmt.Sprintf("the switch came %v after the first failed order (at %v); want within %v", sw-firstFail, firstFail, suspicionSwitchBound)
	}
	return ""
}
