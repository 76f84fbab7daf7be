package compare

import (
	"errors"
	"fmt"
	"time"
)

// Settings are the knobs of every row: brokerpath's Path and the peers'
// timeouts, retries and reconnect intervals. Each table prints the settings
// of each of its rows.
type Settings struct {
	// brokerpath's Path (every brokerpath row).
	ProbeInterval    time.Duration // a probe of each endpoint this often
	ProbeTimeout     time.Duration // one probe's limit
	FailureThreshold int           // consecutive failed probes that make an endpoint DOWN
	InflightGrace    time.Duration
	OrderTimeout     time.Duration // brokerpath's per-order context (it detects with probes, not order timeouts)

	// FIX, every row: the heartbeat both sides agree on (seconds).
	FIXHeartBtInt int
	// QuickfixReconnect is quickfix's ReconnectInterval (its default is 30 s).
	QuickfixReconnect time.Duration

	// REST peers.
	PeerAttemptTimeout time.Duration // every attempt of every REST peer (none has a default)
	FailsafeAttempts   int           // failsafe-go: attempts on the primary (1 + retries) before the Fallback to the backup
	FailsafeDelay      time.Duration // failsafe-go: delay between retries
	FailsafeBreaker    int           // failsafe-go: failures that open its CircuitBreaker (open 5 s)
	RetryableAttempts  int           // go-retryablehttp: attempts on the primary before PrepareRetry aims at the backup
	RetryableWaitMin   time.Duration // go-retryablehttp: RetryWaitMin
	RetryableWaitMax   time.Duration // go-retryablehttp: RetryWaitMax

	// The WebSocket reconnect loop.
	WSSilence        time.Duration // read deadline: no message for this long = dead connection
	WSConnectTimeout time.Duration // one connect (TCP+TLS+upgrade)
	WSBackoffBase    time.Duration // wait before reconnecting: base·2^failed connects …
	WSBackoffMax     time.Duration // … capped here
	WSJitter         float64       // … plus uniform(0, jitter)·wait
	WSSwitchAfter    int           // failed connects before it switches to the other region
}

// DefaultSettings: brokerpath at the bench's probe settings (200 ms probes,
// 150 ms timeout, DOWN after 3) and every peer at the equal budget.
func DefaultSettings() Settings {
	s := Settings{
		ProbeInterval:    200 * time.Millisecond,
		ProbeTimeout:     150 * time.Millisecond,
		FailureThreshold: 3,
		InflightGrace:    200 * time.Millisecond,
		OrderTimeout:     2 * time.Second,
		FIXHeartBtInt:    1,
	}
	s.EqualPeers()
	return s
}

// EqualPeers sets every peer to the detection budget brokerpath's probes
// have: each attempt bounded by ProbeTimeout, attempts spaced so that a new
// one starts every ProbeInterval (a wait of ProbeInterval − ProbeTimeout after
// a timed-out attempt), and the dead region given up after FailureThreshold
// failed attempts, as long as (FailureThreshold−1)·ProbeInterval +
// ProbeTimeout, the time brokerpath takes to declare a blackholed path DOWN.
//
// The WebSocket loop's silent connection is its first failed attempt: no
// message for one ProbeInterval (two ticks), then FailureThreshold−1 failed
// connects of ProbeTimeout each, one every ProbeInterval, and it switches.
// quickfix reconnects every ProbeInterval (brokerpath's cadence).
func (s *Settings) EqualPeers() {
	wait := max(s.ProbeInterval-s.ProbeTimeout, 0)
	s.PeerAttemptTimeout = s.ProbeTimeout
	s.FailsafeAttempts, s.FailsafeDelay, s.FailsafeBreaker = s.FailureThreshold, wait, s.FailureThreshold
	s.RetryableAttempts, s.RetryableWaitMin, s.RetryableWaitMax = s.FailureThreshold, wait, wait
	s.QuickfixReconnect = s.ProbeInterval
	s.WSSilence = s.ProbeInterval
	s.WSConnectTimeout = s.ProbeTimeout
	s.WSBackoffBase, s.WSBackoffMax, s.WSJitter = wait, wait, 0
	s.WSSwitchAfter = max(s.FailureThreshold-1, 1)
}

// PeerDefaults returns s with every peer at its own defaults, as a user who
// adds failover to it would configure it: quickfix's ReconnectInterval 30 s;
// failsafehttp's RetryPolicy (2 retries, no delay) and a CircuitBreaker of 3;
// go-retryablehttp's RetryMax 4 with waits 1–30 s, every retry to the
// backup; the reconnect loop's 2 s read deadline and connect limit, backoff
// 1 s ×2^n up to 30 s with 10 % jitter, switching after 3 failed connects.
// attempt is the REST attempt timeout (none of the libraries has one, and
// without one none of them ever leaves a blackholed region).
func (s Settings) PeerDefaults(attempt time.Duration) Settings {
	s.QuickfixReconnect = 30 * time.Second
	s.PeerAttemptTimeout = attempt
	s.FailsafeAttempts, s.FailsafeDelay, s.FailsafeBreaker = 3, 0, 3
	s.RetryableAttempts, s.RetryableWaitMin, s.RetryableWaitMax = 1, time.Second, 30*time.Second
	s.WSSilence, s.WSConnectTimeout = 2*time.Second, 2*time.Second
	s.WSBackoffBase, s.WSBackoffMax, s.WSJitter = time.Second, 30*time.Second, 0.1
	s.WSSwitchAfter = 3
	return s
}

// Validate names the first setting that cannot work.
func (s Settings) Validate() error {
	var errs []error
	pos := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s is %v, must be > 0", name, d))
		}
	}
	nonneg := func(name string, d time.Duration) {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s is %v, must be >= 0", name, d))
		}
	}
	atLeast1 := func(name string, n int) {
		if n < 1 {
			errs = append(errs, fmt.Errorf("%s is %d, must be >= 1", name, n))
		}
	}
	pos("-probe-interval", s.ProbeInterval)
	pos("-probe-timeout", s.ProbeTimeout)
	if s.ProbeTimeout >= s.ProbeInterval {
		errs = append(errs, fmt.Errorf("-probe-timeout (%v) must be below -probe-interval (%v)", s.ProbeTimeout, s.ProbeInterval))
	}
	atLeast1("-failures", s.FailureThreshold)
	pos("-order-timeout", s.OrderTimeout)
	atLeast1("-fix-heartbeat", s.FIXHeartBtInt)
	pos("-quickfix-reconnect", s.QuickfixReconnect)
	pos("-peer-attempt-timeout", s.PeerAttemptTimeout)
	atLeast1("-failsafe-attempts", s.FailsafeAttempts)
	nonneg("-failsafe-delay", s.FailsafeDelay)
	atLeast1("-failsafe-breaker", s.FailsafeBreaker)
	atLeast1("-retryable-attempts", s.RetryableAttempts)
	nonneg("-retryable-wait-min", s.RetryableWaitMin)
	if s.RetryableWaitMax < s.RetryableWaitMin {
		errs = append(errs, fmt.Errorf("-retryable-wait-max (%v) must be >= -retryable-wait-min (%v)", s.RetryableWaitMax, s.RetryableWaitMin))
	}
	pos("-ws-silence", s.WSSilence)
	pos("-ws-connect-timeout", s.WSConnectTimeout)
	nonneg("-ws-backoff-base", s.WSBackoffBase)
	if s.WSBackoffMax < s.WSBackoffBase {
		errs = append(errs, fmt.Errorf("-ws-backoff-max (%v) must be >= -ws-backoff-base (%v)", s.WSBackoffMax, s.WSBackoffBase))
	}
	if s.WSJitter < 0 || s.WSJitter > 1 {
		errs = append(errs, fmt.Errorf("-ws-jitter is %v, must be in [0, 1]", s.WSJitter))
	}
	atLeast1("-ws-switch-after", s.WSSwitchAfter)
	return errors.Join(errs...)
}

// giveUp is how long brokerpath takes to declare a blackholed path DOWN
// after the probe that first meets the blackhole starts.
func (s Settings) giveUp() time.Duration {
	return time.Duration(s.FailureThreshold-1)*s.ProbeInterval + s.ProbeTimeout
}

// The settings column of each row.

func (s Settings) bpCell() string {
	return fmt.Sprintf("probes every %s, timeout %s, DOWN after %d (≈ %s on a blackhole)", ms(s.ProbeInterval), ms(s.ProbeTimeout), s.FailureThreshold, ms(s.giveUp()))
}

func (s Settings) failsafeCell() string {
	return fmt.Sprintf("%s per attempt, %d attempt(s) on A then Fallback to B, delay %s, breaker after %d", ms(s.PeerAttemptTimeout), s.FailsafeAttempts, ms(s.FailsafeDelay), s.FailsafeBreaker)
}

func (s Settings) retryableCell() string {
	w := ms(s.RetryableWaitMin)
	if s.RetryableWaitMax != s.RetryableWaitMin {
		w += "–" + ms(s.RetryableWaitMax)
	}
	return fmt.Sprintf("%s per attempt, %d attempt(s) on A then B, wait %s, RetryMax %d", ms(s.PeerAttemptTimeout), s.RetryableAttempts, w, s.retryMax())
}

func (s Settings) retryMax() int { return max(4, s.RetryableAttempts+1) }

func (s Settings) quickfixCell() string {
	return fmt.Sprintf("ReconnectInterval %s, HeartBtInt %d s", ms(s.QuickfixReconnect), s.FIXHeartBtInt)
}

func (s Settings) wsLoopCell() string {
	b := ms(s.WSBackoffBase)
	if s.WSBackoffMax != s.WSBackoffBase {
		b += " ×2^n up to " + ms(s.WSBackoffMax)
	}
	if s.WSJitter > 0 {
		b += fmt.Sprintf(" +0–%.0f %%", 100*s.WSJitter)
	}
	return fmt.Sprintf("silence %s, connect %s, wait %s, B after %d failed connects", ms(s.WSSilence), ms(s.WSConnectTimeout), b, s.WSSwitchAfter)
}

// ms renders a duration the short way: 150ms, 1s, 30s.
func ms(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	if d%time.Millisecond == 0 {
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return d.String()
}
