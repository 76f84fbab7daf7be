package dst

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// InvKeptAnswers has teeth: an order a failed attempt settled and a later
// attempt asked about again is caught; asked again after a new send, or
// never kept, it is not.
func TestProgressCheckFindsAnswersAskedAgain(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	start := func(s, attempt int, ids ...string) progressEvent {
		return progressEvent{at: at(s), kind: pathdialer.EventReconcileStart, attempt: attempt, orders: ids}
	}
	failed := func(s, attempt int, ids ...string) progressEvent {
		return progressEvent{at: at(s), kind: pathdialer.EventReconcileFailure, attempt: attempt, orders: ids}
	}
	judged := func(g progressGround) []string {
		var out []string
		g.judge(func(inv, format string, a ...any) { out = append(out, inv) })
		return out
	}
	sent := map[string]time.Time{"a": at(0), "b": at(0), "c": at(0)}
	good := []progressEvent{start(1, 1, "a", "b", "c"), failed(2, 1, "a"), start(3, 2, "b", "c"), failed(4, 2, "b"), start(5, 3, "c")}
	if v := judged(progressGround{start: t0, events: good, sentAt: sent}); len(v) != 0 {
		t.Fatalf("each attempt asked only about the open orders: %v", v)
	}
	planted := []progressEvent{start(1, 1, "a", "b", "c"), failed(2, 1, "a"), start(3, 2, "a", "b", "c")}
	if v := judged(progressGround{start: t0, events: planted, sentAt: sent}); len(v) != 1 || v[0] != InvKeptAnswers {
		t.Fatalf("an order kept and asked again: %v, want one %s", v, InvKeptAnswers)
	}
	resent := map[string]time.Time{"a": at(2).Add(time.Millisecond), "b": at(0), "c": at(0)}
	if v := judged(progressGround{start: t0, events: planted, sentAt: resent}); len(v) != 0 {
		t.Fatalf("an order sent again after its answer was kept is a new ticket: %v", v)
	}
	// An order that finished unknown after its answer was kept is handed
	// over again on purpose (the Path re-hands a late unknown whose verdict
	// was found in flight): no violation.
	lateUnknown := map[string]time.Time{"a": at(2).Add(time.Millisecond)}
	if v := judged(progressGround{start: t0, events: planted, sentAt: sent, unknownAt: lateUnknown}); len(v) != 0 {
		t.Fatalf("an order that finished unknown after its answer was kept is settled again: %v", v)
	}
	early := map[string]time.Time{"a": at(1)}
	if v := judged(progressGround{start: t0, events: planted, sentAt: sent, unknownAt: early}); len(v) != 1 || v[0] != InvKeptAnswers {
		t.Fatalf("an order that finished unknown before its answer was kept, asked again: %v, want one %s", v, InvKeptAnswers)
	}
	// The hook's own answers (an attempt cut short) and an attempt begun at
	// the same virtual instant: the Path may have begun it before the
	// answers reached it; one begun later is judged.
	hook := progressEvent{at: at(2), kind: pathdialer.EventReconcileFailure, attempt: 1, orders: []string{"a"}, hook: true}
	if v := judged(progressGround{start: t0, events: []progressEvent{start(1, 1, "a", "b"), hook, start(2, 1, "a", "b")}, sentAt: sent}); len(v) != 0 {
		t.Fatalf("an attempt begun at the instant the hook returned: %v", v)
	}
	if v := judged(progressGround{start: t0, events: []progressEvent{start(1, 1, "a", "b"), hook, start(3, 1, "a", "b")}, sentAt: sent}); len(v) != 1 || v[0] != InvKeptAnswers {
		t.Fatalf("the hook's answer asked again later: %v, want one %s", v, InvKeptAnswers)
	}
	if !strings.Contains(orCause(""), "switch") {
		t.Fatal("orCause")
	}
}

var flagBudgetSeeds = flag.Int("sim.budgetseeds", 12, "how many seeds TestSimReconcileBudget runs")

// Under a lookup budget each reconcile attempt answers one to three orders
// and fails: every switch still settles every order (each attempt asks only
// about what is still open) and every invariant holds, with resends on the
// Path's word. Some attempt must have kept answers, or the seeds proved
// nothing.
func TestSimReconcileBudget(t *testing.T) {
	kept := 0
	for seed := uint64(1); seed <= uint64(*flagBudgetSeeds); seed++ {
		res := runSeed(t, seed, Options{ReconcileBudget: 1 + int(seed%3), ResendNotReceived: true})
		for _, v := range res.Violations {
			t.Errorf("seed %d (budget %d): %s", seed, 1+seed%3, v)
		}
		for _, n := range res.Notes {
			if strings.HasPrefix(n, "progress: ") {
				kept++
			}
		}
	}
	if kept == 0 {
		t.Fatalf("no failed attempt kept an answer in %d seeds: the budget was never reached", *flagBudgetSeeds)
	}
}
