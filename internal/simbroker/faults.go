package simbroker

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/internal/faultnet"
)

// Service names one entry point of a region. Each sits behind its own
// faultnet relay, so network faults hit one service of one region only.
type Service string

// Services of a region.
const (
	// REST is the order API (HTTPS, HTTP/2 and HTTP/1.1).
	REST Service = "rest"
	// Probe is a second relay in front of the same REST server, for health
	// monitors. Network faults on Probe leave trading traffic untouched: a
	// monitor-only partition (the split case) is Blackhole on Probe.
	Probe Service = "probe"
	// WS is the WebSocket market data server.
	WS Service = "ws"
	// FIX is the region's relay to the broker's one FIX acceptor.
	FIX Service = "fix"
)

// Services lists every service in a fixed order.
var Services = []Service{REST, Probe, WS, FIX}

// ParseService accepts rest, probe, ws or fix.
func ParseService(s string) (Service, error) {
	switch Service(strings.ToLower(strings.TrimSpace(s))) {
	case REST:
		return REST, nil
	case Probe:
		return Probe, nil
	case WS:
		return WS, nil
	case FIX:
		return FIX, nil
	}
	return "", fmt.Errorf("%w: %q (want rest, probe, ws or fix)", ErrUnknownService, s)
}

// Fault is something Broker.SetFault can do to one service of one region.
// Network faults (None, Down, Blackhole, Latency, Reset, Flap) act in the
// service's faultnet relay; application faults (Fault503, Partial,
// UnknownOutcome) act in the broker's handlers. The set is closed: only the
// types of this package implement Fault.
type Fault interface {
	fault()
	String() string
}

// None clears every fault of the service: the relay forwards normally, a
// running Flap stops, and application faults are removed.
type None struct{}

// Down closes the service's listener (dials are refused) and resets its live
// connections; clearing it listens again on the same port.
type Down struct{}

// Blackhole accepts connections and forwards nothing; live connections go silent.
type Blackhole struct{}

// Latency delays every chunk by Delay plus a uniform draw in [0, Jitter], each way.
type Latency struct {
	Delay  time.Duration
	Jitter time.Duration
}

// Reset resets every live connection of the service once.
type Reset struct{}

// Flap alternates Fault (default Down) and None every Period until another
// fault is set on the service.
type Flap struct {
	Period time.Duration
	Fault  Fault // Down, Blackhole, Latency or Reset; nil means Down
}

// Fault503 answers HTTP 503 with Retry-After on the service: the next N
// requests (N > 0), and/or every request until Until (non-zero). On rest it
// hits every /v1 endpoint (orders and the account probe, whichever relay
// they came through); GET /status stays 200. On ws it refuses handshakes.
type Fault503 struct {
	N          int
	Until      time.Time
	RetryAfter time.Duration // default 1s
}

// Partial keeps the service up for health checks but breaks its real work
// ("up for health checks but broken"): on rest, GET /status and
// GET /v1/account answer 200 while POST /v1/orders and DELETE answer 503 at
// once (no timeout); on fix, logon and heartbeats work while NewOrderSingle
// is rejected (ExecutionReport OrdStatus=REJECTED, nothing booked); on ws,
// handshakes and subscriptions succeed but no tick or snapshot is sent.
type Partial struct{}

// UnknownOutcome books the next N orders on the service and then cuts the
// connection before answering. On rest over HTTP/1.1 the connection is
// hijacked and closed; over HTTP/2 the handler aborts (panic
// http.ErrAbortHandler), which resets the stream. On fix the relay
// connection is reset before the ExecutionReport is sent.
type UnknownOutcome struct {
	N int
}

// BookingDelay makes the broker take Delay to book each order on rest
// before it answers (a server still booking): an order whose connection is
// reset meanwhile is still booked, Delay after it arrived, and the client
// gets no answer. Delay 0 ends it (None on the service does too).
type BookingDelay struct {
	Delay time.Duration
}

func (None) fault()           {}
func (Down) fault()           {}
func (Blackhole) fault()      {}
func (Latency) fault()        {}
func (Reset) fault()          {}
func (Flap) fault()           {}
func (Fault503) fault()       {}
func (Partial) fault()        {}
func (UnknownOutcome) fault() {}
func (BookingDelay) fault()   {}

// String describes the fault, e.g. "booking-delay(30ms)".
func (f BookingDelay) String() string { return fmt.Sprintf("booking-delay(%v)", f.Delay) }

// String names the fault ("none").
func (None) String() string { return "none" }

// String names the fault ("down").
func (Down) String() string { return "down" }

// String names the fault ("blackhole").
func (Blackhole) String() string { return "blackhole" }

// String describes the fault, e.g. "latency(200ms+[0,50ms])".
func (f Latency) String() string { return fmt.Sprintf("latency(%v+[0,%v])", f.Delay, f.Jitter) }

// String names the fault ("reset").
func (Reset) String() string { return "reset" }

// String describes the fault, e.g. "flap(down every 2s)".
func (f Flap) String() string {
	inner := Fault(Down{})
	if f.Fault != nil {
		inner = f.Fault
	}
	return fmt.Sprintf("flap(%s every %v)", inner, f.Period)
}

// String describes the fault, e.g. "503(n=10)".
func (f Fault503) String() string {
	var parts []string
	if f.N > 0 {
		parts = append(parts, fmt.Sprintf("n=%d", f.N))
	}
	if !f.Until.IsZero() {
		parts = append(parts, "until="+f.Until.Format(time.RFC3339Nano))
	}
	return "503(" + strings.Join(parts, ",") + ")"
}

// String names the fault ("partial").
func (Partial) String() string { return "partial" }

// String describes the fault, e.g. "unknown-outcome(n=1)".
func (f UnknownOutcome) String() string { return fmt.Sprintf("unknown-outcome(n=%d)", f.N) }

// netFault converts a network fault to its faultnet form.
func netFault(f Fault) (faultnet.Fault, bool) {
	switch f := f.(type) {
	case None:
		return faultnet.None(), true
	case Down:
		return faultnet.Down(), true
	case Blackhole:
		return faultnet.Blackhole(), true
	case Latency:
		return faultnet.Latency(f.Delay, f.Jitter), true
	case Reset:
		return faultnet.Reset(), true
	}
	return faultnet.Fault{}, false
}

// appFaults holds a region's application-level faults per service.
type appFaults struct {
	mu      sync.Mutex
	f503    map[Service]*state503
	partial map[Service]bool
	unknown map[Service]int
	booking map[Service]time.Duration
}

type state503 struct {
	remaining  int // >0: count down; 0 with until set: time-bound only
	counted    bool
	until      time.Time
	retryAfter time.Duration
}

func newAppFaults() *appFaults {
	return &appFaults{f503: map[Service]*state503{}, partial: map[Service]bool{}, unknown: map[Service]int{}, booking: map[Service]time.Duration{}}
}

func (a *appFaults) clear(s Service) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.f503, s)
	delete(a.partial, s)
	delete(a.unknown, s)
	delete(a.booking, s)
}

func (a *appFaults) setBooking(s Service, d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d <= 0 {
		delete(a.booking, s)
		return
	}
	a.booking[s] = d
}

// bookingDelay is how long an order on s takes to book (BookingDelay).
func (a *appFaults) bookingDelay(s Service) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.booking[s]
}

func (a *appFaults) set503(s Service, f Fault503) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ra := f.RetryAfter
	if ra <= 0 {
		ra = time.Second
	}
	a.f503[s] = &state503{remaining: f.N, counted: f.N > 0, until: f.Until, retryAfter: ra}
}

// take503 reports whether this request on s must get a 503, consuming one
// of N if counted, and the Retry-After to send.
func (a *appFaults) take503(s Service, now time.Time) (bool, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.f503[s]
	if !ok {
		return false, 0
	}
	if !st.until.IsZero() && !now.Before(st.until) {
		delete(a.f503, s)
		return false, 0
	}
	if st.counted {
		st.remaining--
		if st.remaining <= 0 {
			delete(a.f503, s)
		}
	}
	return true, st.retryAfter
}

func (a *appFaults) setPartial(s Service) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.partial[s] = true
}

func (a *appFaults) isPartial(s Service) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.partial[s]
}

func (a *appFaults) setUnknown(s Service, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.unknown[s] = n
}

// takeUnknown reports whether the order just booked on s must go unanswered.
func (a *appFaults) takeUnknown(s Service) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.unknown[s] <= 0 {
		return false
	}
	a.unknown[s]--
	if a.unknown[s] == 0 {
		delete(a.unknown, s)
	}
	return true
}

// describe lists the application faults in force on s.
func (a *appFaults) describe(s Service) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	if st, ok := a.f503[s]; ok {
		out = append(out, Fault503{N: st.remaining, Until: st.until}.String())
	}
	if a.partial[s] {
		out = append(out, "partial")
	}
	if n := a.unknown[s]; n > 0 {
		out = append(out, UnknownOutcome{N: n}.String())
	}
	if d := a.booking[s]; d > 0 {
		out = append(out, BookingDelay{Delay: d}.String())
	}
	return out
}

// validateFault checks f's fields and that it applies to s.
func validateFault(s Service, f Fault) error {
	switch f := f.(type) {
	case nil:
		return fmt.Errorf("%w: fault is nil", ErrInvalidFault)
	case None, Down, Blackhole, Reset:
		return nil
	case Latency:
		if f.Delay < 0 || f.Jitter < 0 {
			return fmt.Errorf("%w: Latency Delay %v / Jitter %v must not be negative", ErrInvalidFault, f.Delay, f.Jitter)
		}
		return nil
	case Flap:
		if f.Period <= 0 {
			return fmt.Errorf("%w: Flap.Period %v must be positive", ErrInvalidFault, f.Period)
		}
		if f.Fault != nil {
			if _, ok := f.Fault.(None); ok {
				return fmt.Errorf("%w: Flap.Fault is None", ErrInvalidFault)
			}
			if _, ok := netFault(f.Fault); !ok {
				return fmt.Errorf("%w: Flap.Fault %s is not a network fault", ErrInvalidFault, f.Fault)
			}
			return validateFault(s, f.Fault)
		}
		return nil
	case Fault503:
		if s != REST && s != WS {
			return fmt.Errorf("%w: %s on %s (503 applies to rest and ws)", ErrFaultNotSupported, f, s)
		}
		if f.N < 0 {
			return fmt.Errorf("%w: Fault503.N %d is negative", ErrInvalidFault, f.N)
		}
		if f.N == 0 && f.Until.IsZero() {
			return fmt.Errorf("%w: Fault503 needs N > 0 or Until", ErrInvalidFault)
		}
		return nil
	case Partial:
		if s == Probe {
			return fmt.Errorf("%w: partial on probe (the probe relay fronts the rest server; set it on rest)", ErrFaultNotSupported)
		}
		return nil
	case UnknownOutcome:
		if s != REST && s != FIX {
			return fmt.Errorf("%w: %s on %s (applies to rest and fix)", ErrFaultNotSupported, f, s)
		}
		if f.N <= 0 {
			return fmt.Errorf("%w: UnknownOutcome.N %d must be positive", ErrInvalidFault, f.N)
		}
		return nil
	case BookingDelay:
		if s != REST {
			return fmt.Errorf("%w: %s on %s (applies to rest)", ErrFaultNotSupported, f, s)
		}
		if f.Delay < 0 {
			return fmt.Errorf("%w: BookingDelay.Delay %v must not be negative", ErrInvalidFault, f.Delay)
		}
		return nil
	}
	return fmt.Errorf("%w: %T", ErrInvalidFault, f)
}
