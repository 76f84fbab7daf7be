package dst

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// sweepBuilt runs seeds 1–24 of a hand-built scenario, each in its own
// bubble, and reports every violation of the run and of check, the
// scenario's own invariant (named name).
func sweepBuilt(t *testing.T, name string, build func(uint64) Scenario, check func(*Result) string) {
	t.Helper()
	for seed := uint64(1); seed <= 24; seed++ {
		s := build(seed)
		var res *Result
		synctest.Test(t, func(t *testing.T) {
			var err error
			res, err = Run(s, Options{})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		})
		for _, v := range res.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		if v := check(res); v != "" {
			t.Errorf("seed %d: %s: %s\n%s", seed, name, v, s)
		}
	}
}

var traceAt = regexp.MustCompile(`^\s*(\S+)\s+(.*)$`)

// traceFrom calls fn with each line of res's trace at or after from, in
// order, until fn returns false.
func traceFrom(res *Result, from time.Duration, fn func(at time.Duration, text string) bool) {
	for _, line := range res.Trace {
		m := traceAt.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.ParseDuration(m[1])
		if err != nil || at < from {
			continue
		}
		if !fn(at, m[2]) {
			return
		}
	}
}

// hand builds a Result of s from (at, text) lines, as Run traces them.
func hand(s Scenario, lines ...any) *Result {
	res := &Result{Scenario: s}
	for i := 0; i+1 < len(lines); i += 2 {
		res.Trace = append(res.Trace, fmt.Sprintf("%v %s", lines[i].(time.Duration), lines[i+1].(string)))
	}
	return res
}

// Each hand-built scenario's invariant catches a planted violation and
// passes the run it promises.
func TestBuiltSeedChecksCatchViolations(t *testing.T) {
	ms := time.Millisecond
	ref := refusedScenario(1)
	p := ref.Faults[0].Region
	at := ref.Faults[0].At
	sw := "path switch " + p + "->backup gen=1"
	for _, c := range []struct {
		name string
		res  *Result
		want string // "" passes; else a part of the violation
	}{
		{"refused: switch soon after the first failure", hand(ref, at+10*ms, "order o1 failed", at+30*ms, sw), ""},
		{"refused: no failed order", hand(ref, at+30*ms, sw), "no order failed"},
		{"refused: failure before the fault is not counted", hand(ref, at-10*ms, "order o0 failed", at+30*ms, sw), "no order failed"},
		{"refused: no switch", hand(ref, at+10*ms, "order o1 failed"), "no switch"},
		{"refused: switch too late", hand(ref, at+10*ms, "order o1 failed", at+10*ms+suspicionSwitchBound+ms, sw), "the switch came"},
	} {
		if got := checkRefusedFoundByFirstFailedOrder(c.res); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	bb := blipBlackholeScenario(1)
	blip, dark := bb.Faults[0], bb.Faults[1]
	q := blip.Region
	bound := 2*bb.ProbeInterval + bb.ProbeTimeout
	broken, down, away := "path broken-probe "+q+" probe failed", "path state "+q+" DEGRADED->DOWN", "path switch "+q+"->backup gen=1"
	for _, c := range []struct {
		name string
		res  *Result
		want string
	}{
		{"blip: found within the bound", hand(bb, blip.At+ms, broken, dark.At+bound-2*ms, down, dark.At+bound-ms, away), ""},
		{"blip: no broken probe", hand(bb, dark.At+ms, down, dark.At+2*ms, away), "no broken probe"},
		{"blip: switched during the partition", hand(bb, blip.At+ms, broken, blip.At+2*ms, away), "during the partition"},
		{"blip: no switch", hand(bb, blip.At+ms, broken, dark.At+ms, down), "no switch"},
		{"blip: DOWN too late", hand(bb, blip.At+ms, broken, dark.At+bound+ms, down, dark.At+bound+2*ms, away), "DOWN at"},
		{"blip: switch too late", hand(bb, blip.At+ms, broken, dark.At+ms, down, dark.At+bound+ms, away), "the switch came"},
	} {
		if got := checkBlackholeFoundAfterBlip(c.res); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
