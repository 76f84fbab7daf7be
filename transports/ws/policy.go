package ws

import (
	"slices"
	"time"
)

// reconnectPolicy is the Stream's reconnect policy as a pure function of what
// the Stream knows (no I/O, no clock, no randomness of its own), so a
// simulation of a reconnect storm runs exactly the code the Stream runs.
//
// Reconnecting goes in rounds. Before round n (counting the rounds that failed
// in a row since the connection was lost) the Stream waits Delay: one full
// jitter draw, rand(0, min(Cap, Base·2^n)), or the server's Retry-After when
// that is longer. Then it tries the round's Candidates back to back, without
// waiting between them, and stops at the first that connects. Only a round in
// which every candidate failed counts as a failure (n++). A population that
// lost its region at one instant therefore reaches the surviving region
// uniformly over the first round's window, [0, Base) after whatever a dial to
// the dead region costs (nothing when it refuses, the handshake timeout when
// it is blackholed: the same for everyone, so a shift, not a reshaping).
type reconnectPolicy struct {
	// Backoff draws the wait before each round.
	Backoff Backoff
	// FailuresBeforeFallback whole failed rounds in a row widen the candidates
	// from the active endpoint to every fresh-healthy, unfenced endpoint.
	FailuresBeforeFallback int
	// MaxRetryAfter caps how long a server's Retry-After is honoured.
	MaxRetryAfter time.Duration
}

// roundView is what the Stream knows at the start of a reconnect round.
type roundView struct {
	// Active is the Path's active endpoint.
	Active string
	// Targets are the fresh-healthy endpoints in priority order
	// (engine.Manager.Targets); the active one may be among them.
	Targets []string
	// Fenced reports whether an endpoint is fenced (switched away from); nil
	// means none is.
	Fenced func(name string) bool
	// LostUnswitched is true when the Stream's connection was lost (not closed
	// by the Stream) and the Path has not switched since that connection was
	// dialed: the Path may simply not have noticed yet, and reads may use any
	// healthy path.
	LostUnswitched bool
	// Failed counts the rounds that failed in a row before this one.
	Failed int
}

// Delay returns the wait before a round that follows failed failed rounds, for
// u a uniform draw in [0, 1): the full-jitter draw Backoff.delay(failed, u), or
// retryAfter (the largest Retry-After of the last round, capped by
// MaxRetryAfter) when that is longer.
func (p reconnectPolicy) Delay(failed int, retryAfter time.Duration, u float64) time.Duration {
	d := p.Backoff.delay(failed, u)
	if p.MaxRetryAfter > 0 && retryAfter > p.MaxRetryAfter {
		retryAfter = p.MaxRetryAfter
	}
	return max(d, retryAfter)
}

// minEmptyRoundWait is the least a Stream waits before the round after one
// that had no candidate at all (every endpoint fenced or none healthy), however
// small the Backoff: nothing was dialed, so nothing paces the loop but this.
const minEmptyRoundWait = 50 * time.Millisecond

// Wait is the wait the Stream makes before a round: Delay(failed, retryAfter,
// u), and at least minEmptyRoundWait when the previous round had no candidate
// (lastEmpty).
func (p reconnectPolicy) Wait(failed int, retryAfter time.Duration, u float64, lastEmpty bool) time.Duration {
	d := p.Delay(failed, retryAfter, u)
	if lastEmpty {
		d = max(d, minEmptyRoundWait)
	}
	return d
}

// Candidates returns the endpoints to try in a round, in order: the active
// endpoint first; then, when v.LostUnswitched or after FailuresBeforeFallback
// failed rounds, every other fresh-healthy endpoint in priority order. Fenced
// endpoints are never candidates.
func (p reconnectPolicy) Candidates(v roundView) []string {
	fenced := func(n string) bool { return v.Fenced != nil && v.Fenced(n) }
	var out []string
	if v.Active != "" && !fenced(v.Active) {
		out = append(out, v.Active)
	}
	if !v.LostUnswitched && v.Failed < p.FailuresBeforeFallback {
		return out
	}
	for _, t := range v.Targets {
		if t != "" && !fenced(t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
