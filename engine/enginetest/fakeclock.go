package enginetest

import (
	"sync"
	"time"
)

// FakeClock is a Clock (it satisfies engine.Clock) that only moves when told to, so
// tests of cooldowns, freshness and flap windows never sleep. It is safe for
// concurrent use: a probe running on another goroutine may Advance it while the test
// reads it.
//
// Readings are exactly what the clock was started or Set with, moved by Advance.
// Advance uses time.Time.Add, which moves a monotonic reading and the wall reading
// together, so a clock started from time.Now() yields readings that carry Go's
// monotonic clock, as the system clock's do. Set installs any reading at all,
// including one whose wall and monotonic readings disagree (a stepped wall clock).
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock that reads start until moved.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start}
}

// Now returns the current reading.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward when d is negative) and returns
// the new reading.
func (c *FakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set makes t the current reading, whatever it is.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
