package main

import (
	"testing"
	"time"
	"unsafe"
)

// tornNow is time.Now as the runtime reads it when the thread is descheduled
// between its two clock reads (the wall clock first, then the monotonic one):
// the wall reading of now and the monotonic reading of now+gap. The public API
// cannot build such a reading, so the test writes the monotonic part itself,
// and checks that it did.
func tornNow(t *testing.T, gap time.Duration) (now, torn time.Time) {
	t.Helper()
	type layout struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	if unsafe.Sizeof(time.Time{}) != unsafe.Sizeof(layout{}) {
		t.Fatal("time.Time's layout changed: tornNow needs updating")
	}
	now = time.Now()
	later := now.Add(gap)
	torn = now
	(*layout)(unsafe.Pointer(&torn)).ext = (*layout)(unsafe.Pointer(&later)).ext
	if torn.Sub(now) != gap || torn.UnixNano() != now.UnixNano() {
		t.Fatalf("torn reading not built: monotonic %v apart, wall %v apart", torn.Sub(now), time.Duration(torn.UnixNano()-now.UnixNano()))
	}
	return now, torn
}

// An order's recorded deadline and instants are on the clock the Path
// enforces its validity on (the monotonic one): a lease deadline computed from
// a send time whose two clock reads were torn apart by a descheduled thread
// (2 ms on a loaded host) holds for the Path until its monotonic instant, and
// an order acquired before that instant is no violation; one acquired after it
// still is.
func TestOrderStampsOnThePathsClock(t *testing.T) {
	const gap = 2 * time.Millisecond
	now, until := tornNow(t, gap)
	for _, c := range []struct {
		name    string
		asked   time.Duration // after now (monotonic)
		expired int
	}{
		{"acquired before the deadline the Path enforces", gap / 2, 0},
		{"acquired after it", gap + time.Millisecond, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dt := newDeadlineTarget(nil)
			dt.note(until)
			asked := now.Add(c.asked)
			if granted := asked.Before(until); granted != (c.expired == 0) {
				t.Fatalf("the Path would grant an order asked at +%v: %v", c.asked, granted)
			}
			a := dt.stamp(asked)
			coid := orderCOID("trader-1-7", a, dt.stamp(asked.Add(100*time.Microsecond)), dt.until.Load())
			r := fromAudit(simRecord{Seq: 1, Time: asked, Region: "eu", ClientOrderID: coid, Token: 1, Outcome: "new"})
			res := Result{Mode: "off", Faults: map[string]int{}}
			check(&res, []Record{r})
			if res.Expired != c.expired {
				t.Fatalf("order %s asked at +%v, deadline +%v (monotonic): %d expired, want %d; violations %q", coid, c.asked, gap, res.Expired, c.expired, res.Violations)
			}
		})
	}
}
