//go:build dstfix

package fix

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// SimOnAcquire, in the simulation's build only (-tags dstfix), has f see
// each order's ticket as the Path grants it (its endpoint and token), before
// the order is handed to quickfix. Set it before the first SendOrder.
func (in *Initiator) SimOnAcquire(f func(*pathdialer.Ticket)) { in.onAcquire = f }

// simRands holds the seeded jitter sources SimSeed set, by Initiator.
var simRands sync.Map // *Initiator -> *simRand

type simRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// SimSeed, in the simulation's build only, makes the logon backoff's
// jitter a draw of a source seeded with seed (the process's source would
// move a reconnect by a draw no seed controls). Set it before the Path
// starts; it holds until Close.
func (in *Initiator) SimSeed(seed uint64) {
	simRands.Store(in, &simRand{r: rand.New(rand.NewPCG(seed, 0x6c6f676f6e))})
}

// jitter draws the logon backoff's full jitter: uniform in [0, n).
func (in *Initiator) jitter(n time.Duration) time.Duration {
	v, ok := simRands.Load(in)
	if !ok {
		return rand.N(n)
	}
	s := v.(*simRand)
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.r.Int64N(int64(n)))
}

// SimUnseed, in the simulation's build only, forgets the source SimSeed
// set (after Close).
func (in *Initiator) SimUnseed() { simRands.Delete(in) }
