package drillkit

import (
	"context"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/observe/drill"
)

// Sources are what a Sampler reads. Every field is optional.
type Sources struct {
	// Broker returns the broker's WebSocket counters per region (the
	// simulated broker's Region.WSStats; nil on real endpoints).
	Broker func() map[string]drill.RegionWS
	// Population is the drill's crowd of streams.
	Population *Population
	// Reads returns the driver's reads so far.
	Reads func() (ok, failed int)
}

// Sampler reads Sources at a fixed interval until Stop.
type Sampler struct {
	src     Sources
	mu      sync.Mutex
	samples []drill.Sample
	cancel  context.CancelFunc
	done    chan struct{}
	stopped []drill.Sample
	once    sync.Once
}

// StartSampler takes a first sample at once, then one every interval (at
// least 10 ms) until Stop or the end of ctx.
func StartSampler(ctx context.Context, interval time.Duration, src Sources) *Sampler {
	interval = max(interval, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(ctx)
	s := &Sampler{src: src, cancel: cancel, done: make(chan struct{})}
	s.take()
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.take()
			}
		}
	}()
	return s
}

func (s *Sampler) take() {
	sm := drill.Sample{Time: time.Now(), ReadsOK: -1, ReadsFailed: -1}
	if s.src.Broker != nil {
		sm.Regions = s.src.Broker()
	}
	if s.src.Population != nil {
		sm.Connected = s.src.Population.Connected()
	}
	if s.src.Reads != nil {
		sm.ReadsOK, sm.ReadsFailed = s.src.Reads()
	}
	s.mu.Lock()
	s.samples = append(s.samples, sm)
	s.mu.Unlock()
}

// Samples returns a copy of the samples taken so far.
func (s *Sampler) Samples() []drill.Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]drill.Sample(nil), s.samples...)
}

// Stop takes a last sample, stops the sampler's goroutine and returns every
// sample. Idempotent: later calls return the same samples.
func (s *Sampler) Stop() []drill.Sample {
	s.once.Do(func() {
		s.cancel()
		<-s.done
		s.take()
		s.stopped = s.Samples()
	})
	return s.stopped
}
