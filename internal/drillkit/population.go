// Package drillkit is the machinery of a drill run: a crowd of WebSocket
// streams whose reconnect wave the surviving region must absorb, and a
// sampler of counters taken while the scenario runs. Its Samples and the
// crowd's Stats go into a drill.Input.
package drillkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// ErrInvalidPopulation: NewPopulation's arguments cannot work.
var ErrInvalidPopulation = errors.New("drillkit: invalid population")

// Population is a crowd of ws.Streams on one Path: the other clients of a
// region whose reconnect wave the surviving region must absorb.
// Each stream is a full ws.Stream (jittered reconnect, endpoint fallback,
// resume from sequence), so the wave has the shape real clients give it.
type Population struct {
	streams []*ws.Stream
	once    sync.Once
}

// NewPopulation builds n streams on path, each with cfg (Handler nil: the
// messages are discarded). Nothing connects before Start.
func NewPopulation(path *pathdialer.Path, n int, cfg ws.StreamConfig) (*Population, error) {
	if path == nil || n <= 0 {
		return nil, fmt.Errorf("%w: need a path and n > 0 (got %d)", ErrInvalidPopulation, n)
	}
	if cfg.Handler == nil {
		cfg.Handler = func(ws.Message) {}
	}
	p := &Population{}
	for i := 0; i < n; i++ {
		s, err := ws.NewStream(path, cfg)
		if err != nil {
			return nil, fmt.Errorf("drillkit: population stream %d: %w", i, err)
		}
		p.streams = append(p.streams, s)
	}
	return p, nil
}

// Start starts the streams, one every pace (0: all at once; pace them under
// the broker's handshake budget, or the first ones refused fall back to
// another endpoint and stay there until the next switch). It returns once
// every stream has started; they connect in the background. On error, or
// when ctx ends first, every stream is closed.
func (p *Population) Start(ctx context.Context, pace time.Duration) error {
	for i, s := range p.streams {
		if i > 0 && pace > 0 {
			select {
			case <-ctx.Done():
				p.Close()
				return ctx.Err()
			case <-time.After(pace):
			}
		}
		if err := s.Start(ctx); err != nil {
			p.Close()
			return fmt.Errorf("drillkit: population stream %d: %w", i, err)
		}
	}
	return nil
}

// Len is the number of streams.
func (p *Population) Len() int { return len(p.streams) }

// Stats returns every stream's Stats, in start order.
func (p *Population) Stats() []ws.Stats {
	out := make([]ws.Stats, len(p.streams))
	for i, s := range p.streams {
		out[i] = s.Stats()
	}
	return out
}

// Connected counts the streams connected per endpoint now (empty before
// Start).
func (p *Population) Connected() map[string]int {
	m := map[string]int{}
	for _, s := range p.streams {
		if ep := s.Stats().Endpoint; ep != "" {
			m[ep]++
		}
	}
	return m
}

// Total counts the streams connected now, wherever.
func (p *Population) Total() int {
	n := 0
	for _, c := range p.Connected() {
		n += c
	}
	return n
}

// Close stops every stream. Idempotent.
func (p *Population) Close() {
	p.once.Do(func() {
		var wg sync.WaitGroup
		for _, s := range p.streams {
			wg.Add(1)
			go func() { defer wg.Done(); _ = s.Close() }()
		}
		wg.Wait()
	})
}
