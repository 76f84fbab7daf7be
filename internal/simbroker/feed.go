package simbroker

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// Tick is one market data update. Seq is global per stream: every region
// sees the same Seq for the same tick, possibly later (replication lag).
type Tick struct {
	Stream string    `json:"stream"`
	Seq    uint64    `json:"seq"`
	Price  string    `json:"price"`
	Time   time.Time `json:"time"`
	// epoch names the sequence space Seq belongs to (the generator's): a
	// region's feed starts in it and leaves it only when it restarts.
	epoch string
}

// generator is the one central source of ticks of a broker.
type generator struct {
	mu      sync.Mutex
	rng     *rand.Rand
	streams map[string]*genStream
	feeds   []*feed
	epoch   string     // the central sequence space, drawn at start
	epochs  *rand.Rand // draws epochs, apart from rng so prices do not depend on them
}

type genStream struct {
	seq  uint64
	pips int64 // price in 1e-4 units
}

func newGenerator(streams []string, seed uint64) *generator {
	g := &generator{rng: rand.New(rand.NewPCG(seed, seed+1)), epochs: rand.New(rand.NewPCG(seed, ^seed)), streams: map[string]*genStream{}}
	g.epoch = g.newEpochLocked()
	for i, s := range streams {
		g.streams[s] = &genStream{pips: 10850 + int64(i)*1500}
	}
	return g
}

// newEpochLocked draws a random hex epoch from the broker's seeded source (so
// a seeded broker's epochs repeat). g.mu held, or g not yet shared.
func (g *generator) newEpochLocked() string { return fmt.Sprintf("%016x", g.epochs.Uint64()) }

// newEpoch draws a random hex epoch.
func (g *generator) newEpoch() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.newEpochLocked()
}

func pipsString(p int64) string { return decimal.New(p, -4).StringFixed(4) }

// initial returns the seq-0 state of every stream.
func (g *generator) initial() map[string]Tick {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]Tick{}
	for s, st := range g.streams {
		out[s] = Tick{Stream: s, Seq: st.seq, Price: pipsString(st.pips), Time: time.Now(), epoch: g.epoch}
	}
	return out
}

// publish makes the next tick of stream and hands it to every region's
// feed, in sequence order.
func (g *generator) publish(stream string) (Tick, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st, ok := g.streams[stream]
	if !ok {
		return Tick{}, fmt.Errorf("%w: %q", ErrUnknownStream, stream)
	}
	st.seq++
	st.pips += g.rng.Int64N(11) - 5
	if st.pips < 1 {
		st.pips = 1
	}
	t := Tick{Stream: stream, Seq: st.seq, Price: pipsString(st.pips), Time: time.Now(), epoch: g.epoch}
	for _, f := range g.feeds {
		f.ingest(t)
	}
	return t, nil
}

// lastPrice returns the latest central price of stream, "" if unknown.
func (g *generator) lastPrice(stream string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	st, ok := g.streams[stream]
	if !ok {
		return ""
	}
	return pipsString(st.pips)
}

// subscriber receives a feed's messages; enqueue must not block (it is
// called under the feed's lock).
type subscriber interface {
	enqueue(msg any)
}

// ring is the replay buffer of one stream in one region.
type ring struct {
	buf   []Tick
	start int // index of the oldest
	n     int
	head  Tick // latest delivered (seq 0: the initial state)
}

func (r *ring) push(t Tick) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = t
		r.n++
	} else {
		r.buf[r.start] = t
		r.start = (r.start + 1) % len(r.buf)
	}
	r.head = t
}

// since returns the buffered ticks after seq, or ok=false when seq+1 is no
// longer (or not yet) in the buffer.
func (r *ring) since(seq uint64) (out []Tick, ok bool) {
	if seq == r.head.Seq {
		return nil, true
	}
	if seq > r.head.Seq || r.n == 0 {
		return nil, false
	}
	oldest := r.buf[r.start].Seq
	if seq+1 < oldest {
		return nil, false
	}
	for i := 0; i < r.n; i++ {
		t := r.buf[(r.start+i)%len(r.buf)]
		if t.Seq > seq {
			out = append(out, t)
		}
	}
	return out, true
}

type queuedTick struct {
	due  time.Time
	tick Tick
}

// feed is one region's copy of the market data: replay buffers, live
// subscribers, and the replication-lag queue in front of them.
//
// Its epoch names its sequence space. Every region's feed starts in the
// generator's (they number the same ticks alike, so a client moving between
// regions resumes); a restart (Region.RestartFeed) gives the feed a new
// random epoch and numbers its ticks from 1 again (base: the generator's
// sequence of the last tick before the restart).
type feed struct {
	mu      sync.Mutex
	epoch   string
	base    map[string]uint64 // generator seq = feed seq + base
	last    map[string]uint64 // generator seq of the last tick delivered
	lag     time.Duration
	streams map[string]*ring
	subs    map[string]map[subscriber]struct{}
	queue   []queuedTick
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	stats   *wsCounters
}

func newFeed(initial map[string]Tick, size int, lag time.Duration, stats *wsCounters) *feed {
	f := &feed{
		lag:     lag,
		streams: map[string]*ring{},
		subs:    map[string]map[subscriber]struct{}{},
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		stats:   stats,
		base:    map[string]uint64{},
		last:    map[string]uint64{},
	}
	for s, t := range initial {
		f.epoch = t.epoch
		f.streams[s] = &ring{buf: make([]Tick, size), head: t}
		f.subs[s] = map[subscriber]struct{}{}
		f.last[s] = t.Seq
	}
	go f.run()
	return f
}

// ingest receives a tick from the generator: at once without lag, else after it.
func (f *feed) ingest(t Tick) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lag == 0 && len(f.queue) == 0 {
		f.deliverLocked(t)
		return
	}
	due := time.Now().Add(f.lag)
	if n := len(f.queue); n > 0 && due.Before(f.queue[n-1].due) {
		due = f.queue[n-1].due // keep sequence order
	}
	f.queue = append(f.queue, queuedTick{due: due, tick: t})
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *feed) setLag(d time.Duration) {
	f.mu.Lock()
	f.lag = d
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *feed) deliverLocked(t Tick) {
	r, ok := f.streams[t.Stream]
	if !ok || t.Seq <= f.last[t.Stream] {
		return
	}
	f.last[t.Stream] = t.Seq
	t.Seq -= f.base[t.Stream]
	t.epoch = f.epoch
	r.push(t)
	msg := tickMsg("tick", t)
	for s := range f.subs[t.Stream] {
		s.enqueue(msg)
	}
}

// run releases lagged ticks when they are due.
func (f *feed) run() {
	defer close(f.done)
	for {
		f.mu.Lock()
		now := time.Now()
		for len(f.queue) > 0 && !f.queue[0].due.After(now) {
			f.deliverLocked(f.queue[0].tick)
			f.queue[0] = queuedTick{}
			f.queue = f.queue[1:]
		}
		var wait <-chan time.Time
		var t *time.Timer
		if len(f.queue) > 0 {
			t = time.NewTimer(f.queue[0].due.Sub(now))
			wait = t.C
		}
		f.mu.Unlock()
		select {
		case <-f.stop:
			if t != nil {
				t.Stop()
			}
			return
		case <-f.wake:
		case <-wait:
		}
		if t != nil {
			t.Stop()
		}
	}
}

func (f *feed) close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

// restart starts the feed's numbering over under epoch: every stream's state
// becomes seq 0 of the new epoch, the replay buffers are emptied, and the
// ticks after it are numbered from 1. Live subscribers are left attached (the
// caller closes their connections, as a restarted server would).
func (f *feed) restart(epoch string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch = epoch
	now := time.Now()
	for s, r := range f.streams {
		f.base[s] = f.last[s]
		clear(r.buf)
		r.start, r.n = 0, 0
		r.head = Tick{Stream: s, Seq: 0, Price: r.head.Price, Time: now, epoch: epoch}
	}
}

// currentEpoch returns the feed's epoch.
func (f *feed) currentEpoch() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch
}

// RestartFeed simulates a restart of the region's market-data server: its
// feed takes a new random epoch and numbers every stream from 0 again (the
// state at restart is seq 0, the next tick is 1), its replay buffers are
// emptied, and its WebSocket connections are closed. A client that resumes
// with the old epoch (or a seq the new numbering does not have) is answered
// with a snapshot carrying the new epoch. Other regions are not affected.
func (rg *Region) RestartFeed() {
	rg.feed.restart(rg.b.gen.newEpoch())
	rg.wsMu.Lock()
	conns := make([]*wsConn, 0, len(rg.wsConns))
	for c := range rg.wsConns {
		conns = append(conns, c)
	}
	rg.wsMu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// FeedEpoch returns the epoch the region's feed numbers its ticks in now.
func (rg *Region) FeedEpoch() string { return rg.feed.currentEpoch() }

// head returns the latest seq the region has for stream.
func (f *feed) head(stream string) (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.streams[stream]
	if !ok {
		return 0, false
	}
	return r.head.Seq, true
}

// attachMode says how a stream was attached.
type attachMode int

const (
	attachSubscribe attachMode = iota // snapshot, then live
	attachResumed                     // replayed from the buffer, then live
	attachSnapshot                    // resume impossible: snapshot, then live
)

// attach subscribes sub to stream. With from == nil it sends a snapshot of
// the region's latest state; with from set it replays the ticks after
// *from, or sends a snapshot when *from is older than the buffer or ahead of
// the region (or, in attachEpoch, when the client's epoch is set and not the
// feed's: its seq belongs to another numbering). Replay/snapshot and live ticks are queued under one lock, so
// the subscriber sees no gap and no duplicate.
func (f *feed) attach(sub subscriber, stream string, from *uint64) (attachMode, error) {
	return f.attachEpoch(sub, stream, from, "")
}

// attachEpoch is attach with the client's epoch for *from.
func (f *feed) attachEpoch(sub subscriber, stream string, from *uint64, epoch string) (attachMode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.streams[stream]
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrUnknownStream, stream)
	}
	mode := attachSubscribe
	var replay []Tick
	if from != nil {
		var ok bool
		if epoch != "" && epoch != f.epoch {
			mode = attachSnapshot
		} else if replay, ok = r.since(*from); ok {
			mode = attachResumed
		} else {
			mode = attachSnapshot
		}
	}
	if f.stats != nil {
		f.stats.count(mode) // before anything is queued: a client never sees a message before its count
	}
	if mode == attachResumed {
		for _, t := range replay {
			sub.enqueue(tickMsg("tick", t))
		}
	} else {
		sub.enqueue(tickMsg("snapshot", r.head))
	}
	f.subs[stream][sub] = struct{}{}
	return mode, nil
}

func (f *feed) detach(sub subscriber, stream string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs[stream], sub)
}

func (f *feed) detachAll(sub subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.subs {
		delete(m, sub)
	}
}
