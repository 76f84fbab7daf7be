package venuepace

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// Kraken spot's budget: the burst is spent at once, then one request per
// LookupInterval; a wait that would end after the caller's deadline is
// refused at once and spends nothing.
func TestBucketPacesWithinTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := venue.KrakenSpot()
		b := New(p)
		if b == nil {
			t.Fatal("New of a profile with a budget returned nil")
		}
		every := p.LookupInterval()
		start := time.Now()
		for i := 0; i < int(b.burst); i++ {
			if err := b.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("the burst of %v took %v, want at once", b.burst, d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), every/2)
		defer cancel()
		if err := b.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 0 {
			t.Fatalf("a wait past the deadline: %v after %v, want DeadlineExceeded at once", err, time.Since(start))
		}
		if err := b.Wait(context.Background()); err != nil || time.Since(start) != every {
			t.Fatalf("next request after %v (%v), want %v: the refused wait must spend nothing", time.Since(start), err, every)
		}
	})
}

// A wait ended by its context gives its token back; a nil Bucket paces nothing.
func TestBucketRefundsACancelledWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var unpaced *Bucket
		if New(venue.Profile{}) != nil || unpaced.Wait(context.Background()) != nil {
			t.Fatal("the zero Profile must be unpaced")
		}
		unpaced.Refund()
		b := New(venue.KrakenSpot())
		every := b.every
		b.tokens = 0
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Wait(ctx) }()
		time.Sleep(every / 4)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait: %v", err)
		}
		start := time.Now()
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The cancelled wait gave its token back, and a quarter of one has
		// refilled since: the next request waits 3/4 of an interval (without
		// the refund, 7/4).
		if got, want := time.Since(start), every*3/4; got != want {
			t.Fatalf("next request after %v, want %v", got, want)
		}
	})
}
