package dst

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The blip-then-blackhole move of broken-probe vouching: the primary's probe
// alone goes silent (a monitor-only partition) while two traders' orders keep
// succeeding there — the orders vouch for it, a broken probe, no switch — and
// a second later the whole primary goes dark: probes time out and orders
// hang. The orders that hang end the vouching, so the probes' failures count
// again and the primary is DOWN, and the flow switched, within the probes'
// budget of the blackhole, not when the traders' order timeout or
// MaxHealthAge runs out. The invariant, besides every other of the run:
//
//	blackhole-found-after-blip  the primary is DOWN, and the switch away from it
//	                            comes, within 2 × ProbeInterval + ProbeTimeout of
//	                            the blackhole's start; a broken probe was reported
//	                            before it, and no switch came during the partition
func TestSimVouchBlipThenBlackhole(t *testing.T) {
	sweepBuilt(t, "blackhole-found-after-blip", blipBlackholeScenario, checkBlackholeFoundAfterBlip)
}

// blipBlackholeScenario is seed's world and settings with two traders, an
// order every 100 ms each, rounds every 400 ms (timeout 200 ms), DOWN after 2
// or 3 failures, MaxHealthAge 1.6 s and an order timeout of 2 s, and two
// faults on the primary: its probe alone blackholed from 2 s, and all of it
// from 3 s, both healed at 5 s. No coordinator, pauses or composed moves.
func blipBlackholeScenario(seed uint64) Scenario {
	s := NewScenario(seed)
	s.Coordinated, s.Pauses, s.FollowerLast, s.Moves = false, nil, false, nil
	s.H2, s.FIX = false, false // REST orders over HTTP/1.1: no connection drains fail an order meanwhile
	s.Resting.ArmFailFor = 0   // no dead-man arm failures holding the switch
	s.Traders, s.OrderEvery = 2, 100*time.Millisecond
	s.ProbeInterval, s.ProbeTimeout = 400*time.Millisecond, 200*time.Millisecond
	s.FailureThreshold = 2 + int(seed%2)
	s.MaxHealthAge = 4 * s.ProbeInterval
	s.OrderTimeout = 2 * time.Second
	s.Duration = 7 * time.Second
	s.Faults = []ScheduledFault{
		{At: 2 * time.Second, For: 3 * time.Second, Region: s.Regions[0], Kind: FaultPartition},
		{At: 3 * time.Second, For: 2 * time.Second, Region: s.Regions[0], Kind: FaultBlackhole},
	}
	return s
}

// checkBlackholeFoundAfterBlip reads the trace: a broken probe of the primary
// reported after the partition began and before the blackhole (else the run
// proves nothing), the primary DOWN and the first switch away from it after
// the blackhole began; it returns a violation, or "".
func checkBlackholeFoundAfterBlip(res *Result) string {
	s := res.Scenario
	blip, dark := s.Faults[0], s.Faults[1]
	bound := 2*s.ProbeInterval + s.ProbeTimeout
	var broken, down, sw time.Duration = -1, -1, -1
	traceFrom(res, blip.At, func(at time.Duration, text string) bool {
		if broken < 0 && at < dark.At && strings.HasPrefix(text, "path broken-probe "+blip.Region) {
			broken = at
		}
		if down < 0 && at >= dark.At && strings.HasPrefix(text, "path state "+blip.Region+" ") && strings.HasSuffix(text, "->DOWN") {
			down = at
		}
		if strings.HasPrefix(text, fmt.Sprintf("path switch %s->", blip.Region)) {
			sw = at
			return false
		}
		return true
	})
	switch {
	case broken < 0:
		return "no broken probe reported during the partition (the run proves nothing)"
	case sw < 0:
		return fmt.Sprintf("no switch away from %s after the blackhole at %v", blip.Region, dark.At)
	case sw < dark.At:
		return fmt.Sprintf("a switch away from %s at %v, during the partition, while its orders succeeded", blip.Region, sw)
	case down < 0 || down-dark.At > bound:
		return fmt.Sprintf("%s DOWN at %v, the blackhole at %v; want DOWN within %v (2 × ProbeInterval + ProbeTimeout)", blip.Region, down, dark.At, bound)
	case sw-dark.At > bound:
		return fmt.Sprintf("the switch came %v after the blackhole (at %v); want within %v (2 × ProbeInterval + ProbeTimeout)", sw-dark.At, dark.At, bound)
	}
	return ""
}
