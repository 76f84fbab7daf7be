package status

import (
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/transports/ws"
)

// Ticks counts, for the status page, what a market data stream's consumer
// lost: ticks missed (sequence numbers skipped by a snapshot) and the longest
// silence between two messages of one stream. Wrap the stream's Handler with
// Wrap and pass the Ticks in Options.Ticks. Safe for concurrent use.
type Ticks struct {
	mu       sync.Mutex
	last     map[string]uint64
	lastAt   map[string]time.Time
	messages uint64
	missed   uint64
	longest  time.Duration
	now      func() time.Time
}

// NewTicks returns an empty counter.
func NewTicks() *Ticks {
	return &Ticks{last: map[string]uint64{}, lastAt: map[string]time.Time{}, now: time.Now}
}

// Wrap returns a Handler that counts each message and then calls h.
func (t *Ticks) Wrap(h ws.Handler) ws.Handler {
	return func(m ws.Message) {
		t.observe(m)
		h(m)
	}
}

func (t *Ticks) observe(m ws.Message) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.messages++
	if last, ok := t.last[m.Stream]; ok {
		if m.Seq > last+1 {
			t.missed += m.Seq - last - 1
		}
		if gap := now.Sub(t.lastAt[m.Stream]); gap > t.longest {
			t.longest = gap
		}
	}
	t.last[m.Stream], t.lastAt[m.Stream] = m.Seq, now
}

// TickCounts is what a Ticks counted.
type TickCounts struct {
	// Messages handed to the Handler.
	Messages uint64
	// Missed: sequence numbers never delivered (a snapshot stood in for them).
	Missed uint64
	// LongestSilence between two messages of one stream.
	LongestSilence time.Duration
}

// Counts returns the counts so far.
func (t *Ticks) Counts() TickCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return TickCounts{Messages: t.messages, Missed: t.missed, LongestSilence: t.longest}
}
