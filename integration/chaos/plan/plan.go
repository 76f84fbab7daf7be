// Package plan generates the chaos run's fault schedule: a pure function of
// a seed and the run's options, generated whole before the run starts, so a
// seed replays the same schedule (Digest makes that checkable).
//
// Guarantees of every schedule:
//   - at most len(Regions)-1 regions are faulted at any instant, except in
//     the deliberate "all-down" windows (every service of every region
//     blackholed or down, to exercise halts), which overlap no other fault;
//   - every fault is recovered (all services of its regions cleared) For
//     after it was injected;
//   - faults start in order of At.
package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// Kinds of faults, as printed.
const (
	Blackhole      = "blackhole"
	Down           = "down"
	Latency        = "latency"
	Reset          = "reset"
	Flap           = "flap"
	F503           = "503"
	Partial        = "partial"
	UnknownOutcome = "unknown-outcome"
	Partition      = "partition" // monitor-only: the probe relay blackholed
	AllDown        = "all-down"  // every region: halt
)

// Options shape a schedule.
type Options struct {
	Regions []string
	Faults  int
	// Span is the time over which faults start (after Warmup).
	Span   time.Duration
	Warmup time.Duration
}

// Fault is one scheduled fault.
type Fault struct {
	Index    int
	At, For  time.Duration
	Kind     string
	Regions  []string
	Services []simbroker.Service
	// Latency: Delay and Jitter. Flap: Period and Of (down or blackhole).
	// Unknown outcome: N.
	Delay, Jitter time.Duration
	Period        time.Duration
	Of            string
	N             int
}

// Schedule is a seed's faults.
type Schedule struct {
	Seed    uint64
	Options Options
	Faults  []Fault
}

var weights = []struct {
	kind string
	w    int
}{
	{Blackhole, 3}, {Down, 2}, {Latency, 2}, {Reset, 1}, {Flap, 2},
	{F503, 2}, {Partial, 1}, {UnknownOutcome, 2}, {Partition, 2},
}

// Generate returns the schedule of seed: a pure function of (seed, o).
func Generate(seed uint64, o Options) Schedule {
	r := rand.New(rand.NewPCG(seed, 0x62726f6b65727061))
	s := Schedule{Seed: seed, Options: o}
	if o.Faults <= 0 || len(o.Regions) < 2 {
		return s
	}
	dur := func(lo, hi time.Duration) time.Duration {
		return (lo + time.Duration(r.Int64N(int64(hi-lo)+1))).Round(time.Millisecond)
	}
	// Deliberate all-down windows: a few, spread over the run.
	nAll := max(2, o.Faults/15)
	allAt := map[int]bool{}
	for k := 1; k <= nAll; k++ {
		allAt[k*o.Faults/(nAll+1)] = true
	}
	mean := o.Span / time.Duration(o.Faults)
	busy := map[string]time.Duration{} // region → faulted until
	t := o.Warmup
	total := 0
	for _, w := range weights {
		total += w.w
	}
	for i := 0; i < o.Faults; i++ {
		t += time.Duration(float64(mean) * (0.5 + r.Float64()))
		t = t.Round(time.Millisecond)
		f := Fault{Index: i + 1}
		if allAt[i] {
			for _, u := range busy {
				if u+300*time.Millisecond > t {
					t = u + 300*time.Millisecond
				}
			}
			f.At, f.For, f.Kind = t, dur(1200*time.Millisecond, 2500*time.Millisecond), AllDown
			f.Regions = append([]string(nil), o.Regions...)
			f.Services = append([]simbroker.Service(nil), simbroker.Services...)
			f.Of = []string{Blackhole, Down}[r.IntN(2)]
			for _, rg := range o.Regions {
				busy[rg] = t + f.For
			}
			s.Faults = append(s.Faults, f)
			continue
		}
		// At most len(Regions)-1 faulted at once: wait for one to clear.
		for {
			n := 0
			earliest := time.Duration(-1)
			for _, rg := range o.Regions {
				if busy[rg] > t {
					n++
					if earliest < 0 || busy[rg] < earliest {
						earliest = busy[rg]
					}
				}
			}
			if n < len(o.Regions)-1 {
				break
			}
			t = earliest + 100*time.Millisecond
		}
		var free []string
		for _, rg := range o.Regions {
			if busy[rg] <= t {
				free = append(free, rg)
			}
		}
		f.At = t
		f.Regions = []string{free[r.IntN(len(free))]}
		pick := r.IntN(total)
		for _, w := range weights {
			if pick < w.w {
				f.Kind = w.kind
				break
			}
			pick -= w.w
		}
		f.For = dur(800*time.Millisecond, 5*time.Second)
		network := []simbroker.Service{simbroker.REST, simbroker.Probe, simbroker.WS, simbroker.FIX}
		switch f.Kind {
		case Blackhole, Down, Reset, Flap, Latency:
			f.Services = subset(r, network, 0.5)
		case F503:
			f.Services = subset(r, []simbroker.Service{simbroker.REST, simbroker.WS}, 0.3)
		case Partial:
			f.Services = subset(r, []simbroker.Service{simbroker.REST, simbroker.WS, simbroker.FIX}, 0.5)
		case UnknownOutcome:
			f.Services = subset(r, []simbroker.Service{simbroker.REST, simbroker.FIX}, 0.5)
			f.N = 1 + r.IntN(3)
		case Partition:
			f.Services = []simbroker.Service{simbroker.Probe}
			f.For = dur(1500*time.Millisecond, 5*time.Second)
		}
		switch f.Kind {
		case Latency:
			f.Delay = dur(20*time.Millisecond, 150*time.Millisecond)
			f.Jitter = dur(0, 30*time.Millisecond)
		case Flap:
			f.Period = dur(200*time.Millisecond, 800*time.Millisecond)
			f.Of = []string{Down, Blackhole}[r.IntN(2)]
		case Reset:
			f.For = 200 * time.Millisecond
		}
		busy[f.Regions[0]] = t + f.For
		s.Faults = append(s.Faults, f)
	}
	return s
}

// subset returns all of svcs with probability pAll, else a random non-empty
// subset, in the order of svcs.
func subset(r *rand.Rand, svcs []simbroker.Service, pAll float64) []simbroker.Service {
	if r.Float64() < pAll {
		return append([]simbroker.Service(nil), svcs...)
	}
	for {
		var out []simbroker.Service
		for _, s := range svcs {
			if r.IntN(2) == 0 {
				out = append(out, s)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
}

// SimFault returns the simbroker fault to set on each of f's services,
// given the time of injection (a 503 lasts until now+For).
func (f Fault) SimFault(now time.Time) simbroker.Fault {
	inner := func(k string) simbroker.Fault {
		if k == Blackhole {
			return simbroker.Blackhole{}
		}
		return simbroker.Down{}
	}
	switch f.Kind {
	case Blackhole, Partition:
		return simbroker.Blackhole{}
	case Down:
		return simbroker.Down{}
	case AllDown:
		return inner(f.Of)
	case Latency:
		return simbroker.Latency{Delay: f.Delay, Jitter: f.Jitter}
	case Reset:
		return simbroker.Reset{}
	case Flap:
		return simbroker.Flap{Period: f.Period, Fault: inner(f.Of)}
	case F503:
		return simbroker.Fault503{Until: now.Add(f.For), RetryAfter: time.Second}
	case Partial:
		return simbroker.Partial{}
	case UnknownOutcome:
		return simbroker.UnknownOutcome{N: f.N}
	}
	return simbroker.None{}
}

// String renders one fault on one line.
func (f Fault) String() string {
	svcs := make([]string, len(f.Services))
	for i, s := range f.Services {
		svcs[i] = string(s)
	}
	extra := ""
	switch f.Kind {
	case Latency:
		extra = fmt.Sprintf(" delay=%s+[0,%s]", f.Delay, f.Jitter)
	case Flap:
		extra = fmt.Sprintf(" %s every %s", f.Of, f.Period)
	case AllDown:
		extra = " " + f.Of
	case UnknownOutcome:
		extra = fmt.Sprintf(" n=%d", f.N)
	}
	return fmt.Sprintf("#%02d at %8s for %6s %-15s %s [%s]%s", f.Index, f.At, f.For, f.Kind,
		strings.Join(f.Regions, ","), strings.Join(svcs, ","), extra)
}

// String renders the whole schedule (what Digest hashes).
func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d regions %s faults %d span %s warmup %s\n", s.Seed, strings.Join(s.Options.Regions, ","),
		s.Options.Faults, s.Options.Span, s.Options.Warmup)
	for _, f := range s.Faults {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Digest is the first 16 hex digits of the SHA-256 of String.
func (s Schedule) Digest() string {
	h := sha256.Sum256([]byte(s.String()))
	return hex.EncodeToString(h[:8])
}

// CountByKind counts faults per kind, kinds sorted.
func (s Schedule) CountByKind() []string {
	m := map[string]int{}
	for _, f := range s.Faults {
		m[f.Kind]++
	}
	var out []string
	for k, n := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(out)
	return out
}

// End is when the last fault is recovered.
func (s Schedule) End() time.Duration {
	var end time.Duration
	for _, f := range s.Faults {
		end = max(end, f.At+f.For)
	}
	return end
}

// LongestFault returns the longest For of the schedule's faults.
func (s Schedule) LongestFault() time.Duration {
	var d time.Duration
	for _, f := range s.Faults {
		d = max(d, f.For)
	}
	return d
}
