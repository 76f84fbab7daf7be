package engine_test

import (
	"testing"
	"time"
	"unsafe"
)

// timeLayout mirrors the representation of time.Time (src/time/time.go):
//
//	wall: bit 63 hasMonotonic; when set, bits 62..30 hold 33 bits of seconds since
//	      Jan 1 1885 and bits 29..0 the nanoseconds.
//	ext:  when hasMonotonic is set, the monotonic reading in nanoseconds.
//	loc:  the Location.
type timeLayout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

// steppedReading returns what time.Now would return if, since it returned base, the
// monotonic clock advanced by mono while the OS wall clock (stepped by NTP or an
// operator) advanced by wall: a time.Time whose monotonic reading is base's plus
// mono and whose wall reading is base's plus wall. wall-mono must be whole seconds.
//
// The public API cannot build such a value (Add moves both readings, Round(0) drops
// the monotonic one), so the helper edits the seconds field of the wall word with
// unsafe. It then checks its work through the public API alone: Sub between
// readings with monotonic parts uses only those, Sub after Round(0) uses only the
// wall. If a Go release changes the layout, those checks fail the test loudly.
func steppedReading(t testing.TB, base time.Time, mono, wall time.Duration) time.Time {
	t.Helper()
	const (
		hasMonotonic = 1 << 63
		nsecBits     = 30
		secMask      = 1<<33 - 1
	)
	if unsafe.Sizeof(time.Time{}) != unsafe.Sizeof(timeLayout{}) {
		t.Fatal("steppedReading: time.Time no longer has the layout this helper edits")
	}
	if base.Round(0) == base {
		t.Fatal("steppedReading: base has no monotonic reading; use time.Now()")
	}
	step := wall - mono
	if step%time.Second != 0 {
		t.Fatalf("steppedReading: the wall step %v is not whole seconds", step)
	}
	r := base.Add(mono) // both readings move by mono
	p := (*timeLayout)(unsafe.Pointer(&r))
	if p.wall&hasMonotonic == 0 {
		t.Fatal("steppedReading: reading lost its monotonic part")
	}
	sec := (p.wall>>nsecBits)&secMask + uint64(int64(step/time.Second))
	p.wall = hasMonotonic | (sec&secMask)<<nsecBits | p.wall&(1<<nsecBits-1)

	if got := r.Sub(base); got != mono {
		t.Fatalf("steppedReading: monotonic interval %v, want %v (time.Time layout changed?)", got, mono)
	}
	if got := r.Round(0).Sub(base.Round(0)); got != wall {
		t.Fatalf("steppedReading: wall interval %v, want %v (time.Time layout changed?)", got, wall)
	}
	return r
}

func TestSteppedReading(t *testing.T) {
	base := time.Now()
	for _, tc := range []struct{ mono, wall time.Duration }{
		{time.Second, 24*time.Hour + time.Second},
		{10 * time.Minute, 10*time.Minute - 24*time.Hour},
		{0, 365 * 24 * time.Hour},
	} {
		r := steppedReading(t, base, tc.mono, tc.wall)
		// Further Adds keep the two readings apart by the same step.
		r2 := r.Add(time.Minute)
		if r2.Sub(base) != tc.mono+time.Minute || r2.Round(0).Sub(base.Round(0)) != tc.wall+time.Minute {
			t.Fatalf("Add on a stepped reading: mono %v wall %v", r2.Sub(base), r2.Round(0).Sub(base.Round(0)))
		}
		// The comparison methods follow the monotonic reading too.
		if (tc.mono > 0) != r.After(base) {
			t.Fatalf("After disagrees with the monotonic reading for %+v", tc)
		}
	}
}
