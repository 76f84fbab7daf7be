package enginetest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/engine/enginetest"
)

var _ engine.Clock = (*enginetest.FakeClock)(nil)

func TestFakeClock(t *testing.T) {
	start := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	c := enginetest.NewFakeClock(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	if got := c.Advance(90 * time.Second); got.Sub(start) != 90*time.Second {
		t.Fatalf("Advance returned %v", got)
	}
	if got := c.Now().Sub(start); got != 90*time.Second {
		t.Fatalf("after Advance, Now-start = %v", got)
	}
	c.Advance(-30 * time.Second)
	if got := c.Now().Sub(start); got != time.Minute {
		t.Fatalf("after negative Advance, Now-start = %v", got)
	}
	later := start.Add(24 * time.Hour)
	c.Set(later)
	if got := c.Now(); !got.Equal(later) {
		t.Fatalf("after Set, Now = %v", got)
	}
}

func TestFakeClockKeepsMonotonicReading(t *testing.T) {
	t0 := time.Now()
	c := enginetest.NewFakeClock(t0)
	c.Advance(time.Hour)
	// A reading whose monotonic part was stripped would differ from one that kept
	// it only in String's "m=" suffix; Sub between readings with monotonic parts
	// must equal exactly the advance.
	if got := c.Now().Sub(t0); got != time.Hour {
		t.Fatalf("Now-t0 = %v, want 1h", got)
	}
	if c.Now().Round(0) == c.Now() {
		t.Fatal("reading has no monotonic part although the clock started from time.Now()")
	}
}

func TestFakeClockConcurrent(t *testing.T) {
	c := enginetest.NewFakeClock(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		}()
	}
	wg.Wait()
	if got := c.Now().Sub(time.Unix(0, 0)); got != 8*time.Second {
		t.Fatalf("elapsed %v, want 8s", got)
	}
}
