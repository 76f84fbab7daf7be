package simbroker

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeSub records what a feed sends it.
type fakeSub struct {
	mu   sync.Mutex
	msgs []wsMarketMsg
}

func (s *fakeSub) enqueue(m any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mm, ok := m.(wsMarketMsg); ok {
		s.msgs = append(s.msgs, mm)
	}
}

func (s *fakeSub) got() []wsMarketMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]wsMarketMsg(nil), s.msgs...)
}

func TestFeedReplicationLagDelaysRegionCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGenerator([]string{"px.A"}, 7)
		fast := newFeed(g.initial(), 8, 0, nil)
		slow := newFeed(g.initial(), 8, 2*time.Second, nil)
		defer fast.close()
		defer slow.close()
		g.feeds = []*feed{fast, slow}
		sub := &fakeSub{}
		if _, err := slow.attach(sub, "px.A", nil); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := g.publish("px.A"); err != nil {
				t.Fatal(err)
			}
			<-time.After(500 * time.Millisecond)
		}
		// t=1.5s: the lag-free region has all 3, the lagging one none yet.
		if h, _ := fast.head("px.A"); h != 3 {
			t.Fatalf("fast head %d", h)
		}
		if h, _ := slow.head("px.A"); h != 0 {
			t.Fatalf("slow head %d at 1.5s", h)
		}
		<-time.After(600 * time.Millisecond) // t=2.1s: tick 1 (published at 0) is due
		synctest.Wait()
		if h, _ := slow.head("px.A"); h != 1 {
			t.Fatalf("slow head %d at 2.1s, want 1", h)
		}
		<-time.After(time.Second) // t=3.1s: ticks 2 (0.5s) and 3 (1.0s) are due
		synctest.Wait()
		msgs := sub.got()
		if len(msgs) != 4 || msgs[0].Type != "snapshot" || msgs[1].Seq != 1 || msgs[3].Seq != 3 {
			t.Fatalf("slow subscriber got %+v", msgs)
		}
		// Changing the lag applies to later ticks.
		slow.setLag(0)
		if _, err := g.publish("px.A"); err != nil {
			t.Fatal(err)
		}
		if h, _ := slow.head("px.A"); h != 4 {
			t.Fatalf("slow head %d after lag 0", h)
		}
	})
}

func TestRingResumeDecisions(t *testing.T) {
	r := &ring{buf: make([]Tick, 3)}
	for seq := uint64(1); seq <= 5; seq++ {
		r.push(Tick{Seq: seq})
	}
	// buffer holds 3,4,5; head 5
	cases := []struct {
		from   uint64
		ok     bool
		replay []uint64
	}{
		{5, true, nil},
		{4, true, []uint64{5}},
		{2, true, []uint64{3, 4, 5}},
		{1, false, nil}, // 2 is gone: snapshot
		{6, false, nil}, // ahead of the region: snapshot
	}
	for _, tc := range cases {
		got, ok := r.since(tc.from)
		if ok != tc.ok || len(got) != len(tc.replay) {
			t.Fatalf("since(%d) = %v, %v", tc.from, got, ok)
		}
		for i, s := range tc.replay {
			if got[i].Seq != s {
				t.Fatalf("since(%d)[%d] = %d, want %d", tc.from, i, got[i].Seq, s)
			}
		}
	}
	empty := &ring{buf: make([]Tick, 3)}
	if _, ok := empty.since(0); !ok {
		t.Fatal("resume from 0 on an empty stream must succeed (nothing to replay)")
	}
	if _, ok := empty.since(1); ok {
		t.Fatal("resume ahead of an empty stream must snapshot")
	}
}

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	if b := newTokenBucket(0, 0, t0); b != nil {
		t.Fatal("rate 0 must mean no budget")
	}
	var unlimited *tokenBucket
	if ok, _ := unlimited.take(t0); !ok {
		t.Fatal("nil bucket refused")
	}
	b := newTokenBucket(2, 2, t0)
	for i := range 2 {
		if ok, _ := b.take(t0); !ok {
			t.Fatalf("token %d refused within burst", i)
		}
	}
	ok, wait := b.take(t0)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("over budget: ok=%v wait=%v; want refused, 500ms", ok, wait)
	}
	if ok, _ := b.take(t0.Add(500 * time.Millisecond)); !ok {
		t.Fatal("refilled token refused")
	}
	if got := retryAfterSeconds(wait); got != 1 {
		t.Fatalf("Retry-After for 500ms = %d, want 1", got)
	}
	if got := retryAfterSeconds(2100 * time.Millisecond); got != 3 {
		t.Fatalf("Retry-After for 2.1s = %d, want 3", got)
	}
}

func TestBookIdempotencyAndValidation(t *testing.T) {
	bk := newBook(DedupAcrossRegions)
	now := time.Now()
	px := func(string) string { return "1.2345" }
	o, created, err := bk.place(orderRequest{ClientOrderID: "a", Symbol: "X", Side: "buy", Type: "market", Qty: "1"}, "eu", "rest", 0, px, now)
	if err != nil || !created || o.AvgPrice != "1.2345" || o.Status != StatusFilled {
		t.Fatalf("place = %+v %v %v", o, created, err)
	}
	o2, created, err := bk.place(orderRequest{ClientOrderID: "a", Symbol: "Y", Side: "sell", Type: "limit", Qty: "9", Price: "2"}, "us", "fix", 0, px, now)
	if err != nil || created || o2.OrderID != o.OrderID || o2.Region != "eu" {
		t.Fatalf("repeat = %+v %v %v; want the existing order", o2, created, err)
	}
	for _, bad := range []orderRequest{
		{Symbol: "X", Side: "buy", Type: "market", Qty: "1"},
		{ClientOrderID: "b", Side: "buy", Type: "market", Qty: "1"},
		{ClientOrderID: "b", Symbol: "X", Side: "buy", Type: "market", Qty: "0"},
		{ClientOrderID: "b", Symbol: "X", Side: "buy", Type: "limit", Qty: "1"},
		{ClientOrderID: "b", Symbol: "X", Side: "buy", Type: "stop", Qty: "1"},
	} {
		if _, _, err := bk.place(bad, "eu", "rest", 0, px, now); !errors.Is(err, errInvalidOrder) {
			t.Errorf("place(%+v) = %v, want invalid", bad, err)
		}
	}
	if n := len(bk.list(false)); n != 1 {
		t.Fatalf("book has %d orders", n)
	}
}

func TestAuditLogHelpers(t *testing.T) {
	t0 := time.Unix(100, 0)
	l := AuditLog{
		{Kind: KindOrder, Region: "eu", ClientOrderID: "x", Outcome: OutcomeNew, Time: t0},
		{Kind: KindOrder, Region: "us", ClientOrderID: "x", Outcome: OutcomeDuplicate, Time: t0.Add(time.Second)},
		{Kind: KindOrder, Region: "eu", ClientOrderID: "y", Outcome: OutcomeCut, Time: t0.Add(2 * time.Second)},
		{Kind: KindLogon, Region: "us", Outcome: OutcomeOK, Time: t0.Add(3 * time.Second)},
		{Kind: KindOrder, Region: "us", ClientOrderID: "y", Outcome: OutcomeNew, Time: t0.Add(4 * time.Second)}, // a (simulated) bug
	}
	if d := l.Duplicates(); len(d) != 1 || d[0] != "y" {
		t.Fatalf("Duplicates = %v", d)
	}
	if s := l.Submissions(); s["x"] != 2 || s["y"] != 2 || len(s) != 2 {
		t.Fatalf("Submissions = %v", s)
	}
	if a := l.AcceptedThrough("eu", t0.Add(time.Second)); len(a) != 1 || a[0].ClientOrderID != "y" {
		t.Fatalf("AcceptedThrough = %+v", a)
	}
	if n := len(l.Booked()); n != 3 {
		t.Fatalf("Booked = %d", n)
	}
}
