package ws

import "time"

// Backoff is a capped exponential backoff drawn with full jitter: the
// delay before reconnect attempt n (counting from 0) is uniform in
// [0, min(Cap, Base·2^n)). Full jitter spreads a population that lost its
// connections at the same instant over the whole window instead of landing it
// in one second.
type Backoff struct {
	// Base is the ceiling of the first attempt's window. Must be > 0.
	Base time.Duration
	// Cap is the largest ceiling; a wide one (a minute) spreads a regional herd.
	// Must be >= Base.
	Cap time.Duration
}

// defaultBackoff is base 1 s, cap 60 s.
func defaultBackoff() Backoff { return Backoff{Base: time.Second, Cap: time.Minute} }

// ceiling returns min(Cap, Base·2^attempt), the top of attempt's window. It never
// overflows.
func (b Backoff) ceiling(attempt int) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	c := b.Base
	for i := 0; i < attempt && c < b.Cap; i++ {
		c *= 2
	}
	if c > b.Cap {
		c = b.Cap
	}
	return c
}

// delay returns the full-jitter delay for attempt given u, a uniform draw in
// [0, 1): u·ceiling(attempt). The Stream calls it with a fresh random draw; a
// simulation may call it with its own.
func (b Backoff) delay(attempt int, u float64) time.Duration {
	if u < 0 {
		u = 0
	}
	if u >= 1 {
		u = 0.999999
	}
	return time.Duration(u * float64(b.ceiling(attempt)))
}
