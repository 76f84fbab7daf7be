package simbroker

import "testing"

// After a restart the feed numbers from 0 in a new epoch. A resume whose seq
// the new numbering happens to hold is still answered with a snapshot when it
// names the old epoch (its seq means another tick); one naming the new epoch
// is replayed.
func TestFeedRestartEpochDecidesResume(t *testing.T) {
	g := newGenerator([]string{"px.A"}, 7)
	f := newFeed(g.initial(), 64, 0, nil)
	defer f.close()
	g.feeds = []*feed{f}
	old := f.currentEpoch()
	if old == "" || old != g.epoch {
		t.Fatalf("feed epoch %q, generator %q: a feed starts in the generator's", old, g.epoch)
	}
	for range 10 {
		if _, err := g.publish("px.A"); err != nil {
			t.Fatal(err)
		}
	}
	f.restart(g.newEpoch())
	epoch := f.currentEpoch()
	if epoch == old {
		t.Fatal("restart kept the epoch")
	}
	if h, _ := f.head("px.A"); h != 0 {
		t.Fatalf("head %d after restart, want 0", h)
	}
	for range 20 {
		if _, err := g.publish("px.A"); err != nil {
			t.Fatal(err)
		}
	}
	if h, _ := f.head("px.A"); h != 20 {
		t.Fatalf("head %d, want 20 in the new numbering", h)
	}
	from := uint64(5)
	sub := &fakeSub{}
	if m, err := f.attachEpoch(sub, "px.A", &from, old); err != nil || m != attachSnapshot {
		t.Fatalf("resume at 5 in the old epoch: mode %v err %v, want a snapshot", m, err)
	}
	if got := sub.got(); len(got) != 1 || got[0].Type != "snapshot" || got[0].Seq != 20 || got[0].Epoch != epoch {
		t.Fatalf("old-epoch resume got %+v, want the snapshot at 20 in %q", got, epoch)
	}
	sub = &fakeSub{}
	if m, err := f.attachEpoch(sub, "px.A", &from, epoch); err != nil || m != attachResumed {
		t.Fatalf("resume at 5 in the new epoch: mode %v err %v, want a replay", m, err)
	}
	if got := sub.got(); len(got) != 15 || got[0].Seq != 6 || got[0].Type != "tick" || got[14].Epoch != epoch {
		t.Fatalf("new-epoch resume got %d messages %+v", len(got), got[:min(1, len(got))])
	}
}
