package faultnet

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors returned by this package. Check them with errors.Is.
var (
	// ErrClosed is returned by operations on a Relay or Schedule after Close/Stop.
	ErrClosed = errors.New("faultnet: relay closed")
	// ErrInvalidFault is returned for a Fault whose fields cannot work
	// (an unknown Kind, a negative Delay or Jitter).
	ErrInvalidFault = errors.New("faultnet: invalid fault")
	// ErrInvalidConfig is returned by New for a Config that cannot work.
	ErrInvalidConfig = errors.New("faultnet: invalid config")
)

// Kind names what a Relay does to the traffic it carries.
type Kind uint8

const (
	// KindNone forwards every byte as soon as it is read.
	KindNone Kind = iota
	// KindDown closes the listener (new dials are refused by the kernel) and
	// resets every live connection on both sides (SO_LINGER 0). Leaving Down
	// listens again on the same address.
	KindDown
	// KindBlackhole accepts new connections and then forwards nothing in
	// either direction; live connections go silent too. Bytes are held, not
	// dropped: when the fault is cleared they are delivered in order, as TCP
	// retransmission would after a healed partition. Closes and resets are
	// held as well, so neither side learns that the other went away.
	KindBlackhole
	// KindLatency delays every chunk of bytes, in each direction, by Delay
	// plus a uniformly drawn extra in [0, Jitter], measured from the moment
	// the relay read it. Order is preserved.
	KindLatency
	// KindReset resets every live connection once (RST to both sides) and
	// then behaves as KindNone: Relay.Fault reports None afterwards.
	KindReset
)

// String returns the lower-case name of the kind ("none", "down", ...).
func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindDown:
		return "down"
	case KindBlackhole:
		return "blackhole"
	case KindLatency:
		return "latency"
	case KindReset:
		return "reset"
	default:
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
}

// Fault is what a Relay does to its traffic. The zero value is None.
// Delay and Jitter are read only for KindLatency.
type Fault struct {
	Kind   Kind
	Delay  time.Duration
	Jitter time.Duration
}

// None returns the fault that forwards everything untouched.
func None() Fault { return Fault{Kind: KindNone} }

// Down returns the fault that refuses new connections and resets live ones.
func Down() Fault { return Fault{Kind: KindDown} }

// Blackhole returns the fault that accepts connections and then forwards nothing.
func Blackhole() Fault { return Fault{Kind: KindBlackhole} }

// Latency returns the fault that delays each chunk by delay plus up to jitter.
func Latency(delay, jitter time.Duration) Fault {
	return Fault{Kind: KindLatency, Delay: delay, Jitter: jitter}
}

// Reset returns the momentary fault that resets every live connection once.
func Reset() Fault { return Fault{Kind: KindReset} }

// Validate reports, wrapping ErrInvalidFault, why f cannot be applied.
func (f Fault) Validate() error {
	if f.Kind > KindReset {
		return fmt.Errorf("%w: unknown Kind %d", ErrInvalidFault, uint8(f.Kind))
	}
	if f.Delay < 0 {
		return fmt.Errorf("%w: Delay %v is negative", ErrInvalidFault, f.Delay)
	}
	if f.Jitter < 0 {
		return fmt.Errorf("%w: Jitter %v is negative", ErrInvalidFault, f.Jitter)
	}
	return nil
}

// String describes the fault, e.g. "latency(200ms±50ms)".
func (f Fault) String() string {
	if f.Kind == KindLatency {
		return fmt.Sprintf("latency(%v+[0,%v])", f.Delay, f.Jitter)
	}
	return f.Kind.String()
}
