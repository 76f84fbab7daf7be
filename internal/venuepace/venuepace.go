// Package venuepace spaces a reconciler's requests (REST lookups, FIX status
// requests) within a venue's documented lookup budget.
package venuepace

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// unknownBurst is the bucket of a venue whose budget is unknown.
const unknownBurst = 10

// Bucket is a token bucket of one request per venue.Profile.LookupInterval,
// holding as many as one window of the budget allows. One per reconciler,
// shared by every reconcile: the budget is the venue's, not one reconcile's.
// A nil Bucket paces nothing.
type Bucket struct {
	mu     sync.Mutex
	every  time.Duration
	burst  float64
	tokens float64
	last   time.Time
}

// New returns the bucket of p's budget; nil (unpaced) for the zero Profile.
func New(p venue.Profile) *Bucket {
	if p == (venue.Profile{}) {
		return nil
	}
	every := p.LookupInterval()
	burst := float64(unknownBurst)
	if b := p.LookupBudget; b.Reliable() && b.Value.Per > 0 {
		burst = max(1, math.Floor(float64(b.Value.Per)/float64(every)))
	}
	return &Bucket{every: every, burst: burst, tokens: burst}
}

// Wait blocks until one request may go (a nil Bucket: at once). It returns
// ctx's error, spending nothing, when ctx ends before then, and
// context.DeadlineExceeded at once when ctx's deadline comes first.
func (b *Bucket) Wait(ctx context.Context) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	now := time.Now()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+float64(now.Sub(b.last))/float64(b.every))
	}
	b.last = now
	var d time.Duration
	if b.tokens < 1 {
		d = time.Duration((1 - b.tokens) * float64(b.every))
	}
	if dl, ok := ctx.Deadline(); ok && now.Add(d).After(dl) {
		b.mu.Unlock()
		return context.DeadlineExceeded
	}
	b.tokens--
	b.mu.Unlock()
	if d == 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		b.Refund()
		return ctx.Err()
	}
}

// Refund returns a request Wait allowed that was not sent.
func (b *Bucket) Refund() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.tokens = min(b.burst, b.tokens+1)
	b.mu.Unlock()
}
