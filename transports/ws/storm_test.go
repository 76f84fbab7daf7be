package ws_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/transports/ws"
)

// storm is one simulated reconnect storm: n clients connected to eu lose it at
// t=0 and reconnect to the survivor us, each with its own Path.
type storm struct {
	n int
	// pol is the Stream's policy: the candidates of every round come from
	// pol.Candidates, exactly as Stream.connect asks for them.
	pol ws.ReconnectPolicy
	// delay is the wait before a round after failed failed rounds; for full
	// jitter it is pol.Delay, the function the Stream calls.
	delay func(failed int, retryAfter time.Duration, u float64) time.Duration
	// deadCost is what a dial to dead eu costs: 0 when it refuses at once,
	// the handshake timeout when it is blackholed.
	deadCost time.Duration
}

// Each client's Path probes eu every second (a uniform phase in [0, 1 s));
// eu's first failed probe makes it DEGRADED (no longer among the Targets) and
// the Path switches to us at eu's FailureThreshold-th (3) consecutive probe
// failure. The client's lost connection and failed dials to eu are the
// Stream's own evidence: they move the stream, not the Path (see the package
// doc). After the switch eu is fenced.
const (
	probeInterval = time.Second
	threshold     = 3
)

// run returns every client's arrival time at us.
func (m storm) run(rng *rand.Rand) []time.Duration {
	arrivals := make([]time.Duration, 0, m.n)
	for range m.n {
		phase := time.Duration(rng.Float64() * float64(probeInterval))
		switched := func(t time.Duration) bool {
			return phase+time.Duration(threshold-1)*probeInterval <= t
		}
		var t time.Duration
		failed := 0
		for arrived := false; !arrived; {
			t += m.delay(failed, 0, rng.Float64())
			sw := switched(t)
			v := ws.RoundView{Active: "eu", Targets: []string{"us"}, LostUnswitched: !sw, Failed: failed}
			if sw {
				v.Active, v.Fenced = "us", func(n string) bool { return n == "eu" }
			} else if t < phase {
				v.Targets = []string{"eu", "us"}
			}
			for _, c := range m.pol.Candidates(v) {
				if c == "us" {
					arrivals = append(arrivals, t)
					arrived = true
					break
				}
				t += m.deadCost // eu: refused or timed out
			}
			if !arrived {
				failed++
			}
		}
	}
	return arrivals
}

// bins is a histogram of arrivals with one bin width.
type bins struct {
	width       time.Duration
	counts      []int
	first, last int // first and last non-empty bin
	peak        int
}

func histogramOf(arrivals []time.Duration, width time.Duration) bins {
	b := bins{width: width, first: -1}
	for _, a := range arrivals {
		i := int(a / width)
		for len(b.counts) <= i {
			b.counts = append(b.counts, 0)
		}
		b.counts[i]++
	}
	for i, c := range b.counts {
		if c > 0 {
			if b.first < 0 {
				b.first = i
			}
			b.last = i
		}
		b.peak = max(b.peak, c)
	}
	return b
}

// spread is the number of bins from the first arrival to the last.
func (b bins) spread() int { return b.last - b.first + 1 }

// ideal is N / spread: the arrivals per bin if they were flat over the spread.
func (b bins) ideal() float64 {
	n := 0
	for _, c := range b.counts {
		n += c
	}
	return float64(n) / float64(b.spread())
}

func (b bins) String() string {
	var s strings.Builder
	for i, c := range b.counts {
		if c > 0 {
			fmt.Fprintf(&s, " [%v]=%d", time.Duration(i)*b.width, c)
		}
	}
	return s.String()
}

// TestReconnectStorm (issue 6): 10,000 clients lose their region at the same
// instant and reconnect with the defaults. The survivor's arrivals per second
// and per 100 ms are logged (go test -v -run Storm) with peak / ideal, next to
// a fixed 1 s delay client. Target: peak <= 1.3 x ideal for full jitter.
func TestReconnectStorm(t *testing.T) {
	const n = 10000
	cfg := ws.DefaultStreamConfig()
	pol := ws.ReconnectPolicy{Backoff: cfg.Backoff, FailuresBeforeFallback: cfg.FailuresBeforeFallback, MaxRetryAfter: cfg.MaxRetryAfter}
	fixed := func(_ int, retryAfter time.Duration, _ float64) time.Duration { return max(time.Second, retryAfter) }
	for _, sc := range []struct {
		name     string
		deadCost time.Duration
	}{
		{"eu refuses", 0},
		{"eu blackholed (handshake timeout)", cfg.DialTimeout},
	} {
		jit := storm{n: n, pol: pol, delay: pol.Delay, deadCost: sc.deadCost}.run(rand.New(rand.NewPCG(1, 2)))
		fix := storm{n: n, pol: pol, delay: fixed, deadCost: sc.deadCost}.run(rand.New(rand.NewPCG(1, 2)))
		for _, w := range []time.Duration{time.Second, 100 * time.Millisecond} {
			j, f := histogramOf(jit, w), histogramOf(fix, w)
			t.Logf("%s, %v bins: full jitter (base %v, cap %v): peak %d, ideal %.0f (spread %d bins = %v), peak/ideal %.2f;%s",
				sc.name, w, pol.Backoff.Base, pol.Backoff.Cap, j.peak, j.ideal(), j.spread(), time.Duration(j.spread())*w, float64(j.peak)/j.ideal(), j)
			t.Logf("%s, %v bins: fixed 1 s delay: peak %d, spread %d bin(s); peak / full jitter's ideal %.2f;%s",
				sc.name, w, f.peak, f.spread(), float64(f.peak)/j.ideal(), f)
			if w != 100*time.Millisecond {
				continue
			}
			if r := float64(j.peak) / j.ideal(); r > 1.3 {
				t.Errorf("%s: full jitter peak/ideal %.2f over 100 ms bins, target <= 1.3", sc.name, r)
			}
			if f.peak != n || float64(f.peak) < 5*j.ideal() {
				t.Errorf("%s: fixed delay peak %d per 100 ms, want all %d in one bin, >= 5x full jitter's ideal %.0f", sc.name, f.peak, n, j.ideal())
			}
		}
		// With the default base the whole first round fits in one second, so
		// per-second bins cannot tell the policies apart. A 10 s base (a
		// survivor that takes 1,000 handshakes a second) shows the shape per
		// second, including the clients whose Path switched before their round.
		wide := pol
		wide.Backoff.Base = 10 * time.Second
		wj := storm{n: n, pol: wide, delay: wide.Delay, deadCost: sc.deadCost}.run(rand.New(rand.NewPCG(1, 2)))
		for _, w := range []time.Duration{time.Second, 100 * time.Millisecond} {
			j := histogramOf(wj, w)
			t.Logf("%s, %v bins: full jitter (base %v): peak %d, ideal %.0f (spread %d bins), peak/ideal %.2f", sc.name, w, wide.Backoff.Base, j.peak, j.ideal(), j.spread(), float64(j.peak)/j.ideal())
			if w == time.Second {
				t.Logf("  %s", j)
			}
		}
	}
}

// The policy's rounds: which endpoints a round tries, and how long it waits.
func TestReconnectPolicyRounds(t *testing.T) {
	pol := ws.ReconnectPolicy{Backoff: ws.DefaultBackoff(), FailuresBeforeFallback: 3, MaxRetryAfter: 2 * time.Minute}
	fencedEU := func(n string) bool { return n == "eu" }
	for _, tc := range []struct {
		name string
		v    ws.RoundView
		want []string
	}{
		{"start: the active endpoint only", ws.RoundView{Active: "eu", Targets: []string{"eu", "us"}}, []string{"eu"}},
		{"lost, not switched: active then the healthy rest", ws.RoundView{Active: "eu", Targets: []string{"ap", "us"}, LostUnswitched: true}, []string{"eu", "ap", "us"}},
		{"lost, switched: the new active", ws.RoundView{Active: "us", Targets: []string{"eu", "us", "ap"}, Fenced: fencedEU}, []string{"us"}},
		{"failed rounds widen", ws.RoundView{Active: "us", Targets: []string{"eu", "us", "ap"}, Fenced: fencedEU, Failed: 3}, []string{"us", "ap"}},
		{"fenced never", ws.RoundView{Active: "us", Targets: []string{"eu"}, Fenced: fencedEU, LostUnswitched: true}, []string{"us"}},
	} {
		if got := pol.Candidates(tc.v); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		failed int
		ra     time.Duration
		u      float64
		want   time.Duration
	}{
		{0, 0, 0.5, 500 * time.Millisecond},
		{1, 0, 0.5, time.Second},
		{10, 0, 0.5, 30 * time.Second},
		{0, 3 * time.Second, 0.5, 3 * time.Second},  // Retry-After longer than the draw
		{6, 3 * time.Second, 0.5, 30 * time.Second}, // the draw longer than Retry-After
		{0, time.Hour, 0.5, 2 * time.Minute},        // Retry-After capped
	} {
		if got := pol.Delay(tc.failed, tc.ra, tc.u); got != tc.want {
			t.Errorf("Delay(%d, %v, %v) = %v, want %v", tc.failed, tc.ra, tc.u, got, tc.want)
		}
	}
}
