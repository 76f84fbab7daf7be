// Package compare measures brokerpath against the peers a user would pick
// instead — quickfix's own multi-host failover, a bare http.Transport,
// failsafe-go's failsafehttp, hashicorp/go-retryablehttp and a typical
// WebSocket reconnect loop — on the simulated broker, in one process run.
//
// Every scenario starts its own simulated broker (internal/simbroker), so runs
// do not share state; the healthy-path throughput runs against a broker in a
// child process so that allocation counts are the client's alone.
package compare

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

const (
	// ThroughputRun is one healthy-path run of one row (rows rotated between
	// runs): long enough that a row's median reproduces.
	ThroughputRun = 3 * time.Second
	// minSlowDelay is the least delay each way of the slow-primary scenario.
	minSlowDelay = 200 * time.Millisecond
)

// slowDelay is the slow-primary scenario's delay each way: longer than a
// peer's attempt timeout, a slow broker, not a dead one.
func slowDelay(s Settings) time.Duration {
	return max(minSlowDelay, s.PeerAttemptTimeout+50*time.Millisecond)
}

// Options control a comparison run.
type Options struct {
	// Runs per row (median of Runs). At least 5 for the published table.
	Runs int
	// Quick: one run per row, shorter bounds, and the 30 s quickfix row skipped
	// (for go test).
	Quick bool
	// Settings of the first table (equal budgets); the zero value means
	// DefaultSettings().
	Settings Settings
	// DefaultsAttemptTimeout is the REST attempt timeout of the second table
	// (every peer at its own defaults; none has an attempt timeout of its
	// own). Zero means 150 ms.
	DefaultsAttemptTimeout time.Duration
	// Progress receives one line per step; nil discards.
	Progress func(format string, args ...any)
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

var seq atomic.Uint64

// uniq returns a name unique in the process (quickfix's session registry is
// global; client order IDs must never collide across runs).
func uniq(prefix string) string { return fmt.Sprintf("%s%d", prefix, seq.Add(1)) }

// startBroker starts a simulated broker with CompIDs of its own.
func startBroker(mutate func(*simbroker.Config)) (*simbroker.Broker, error) {
	cfg := simbroker.DefaultConfig()
	n := seq.Add(1)
	cfg.BrokerCompID = fmt.Sprintf("SIMBROKER%d", n)
	cfg.ClientCompID = fmt.Sprintf("CLIENT%d", n)
	if mutate != nil {
		mutate(&cfg)
	}
	return simbroker.Start(context.Background(), cfg)
}

// blackholeRegion blackholes every service of region: rest, probe, ws, fix.
func blackholeRegion(b *simbroker.Broker, region string) error {
	for _, svc := range simbroker.Services {
		if err := b.SetFault(region, svc, simbroker.Blackhole{}); err != nil {
			return err
		}
	}
	return nil
}

// regionAddrs is what a client needs to know of one region.
type regionAddrs struct {
	Name, REST, Probe, WS, FIX string
}

// brokerAddrs is what clients need to know of a broker (possibly in another
// process).
type brokerAddrs struct {
	Regions []regionAddrs
	APIKey  string
	CAPEM   []byte
}

func addrsOf(b *simbroker.Broker) brokerAddrs {
	a := brokerAddrs{APIKey: b.APIKey(), CAPEM: b.CACertPEM()}
	for _, rg := range b.Regions() {
		a.Regions = append(a.Regions, regionAddrs{Name: rg.Name(), REST: rg.RESTURL(), Probe: rg.ProbeURL(), WS: rg.WSURL(), FIX: rg.FIXAddr()})
	}
	return a
}

// pathConfig is the brokerpath configuration of every row: rest.Probe on
// each region's ProbeURL + /v1/account with the API key, every
// s.ProbeInterval, DOWN after s.FailureThreshold failures, LocalFenceOnly.
func pathConfig(a brokerAddrs, s Settings, services func(r regionAddrs) map[string]string) (pathdialer.Config, error) {
	tlsCfg := tlsConfig(a.CAPEM)
	probe, err := rest.Probe(rest.ProbeOptions{
		Path: "/v1/account", Header: http.Header{"X-API-Key": {a.APIKey}},
		TLSConfig: tlsCfg, Service: "probe",
	})
	if err != nil {
		return pathdialer.Config{}, err
	}
	cfg := pathdialer.DefaultConfig()
	for i, r := range a.Regions {
		svcs := services(r)
		svcs["probe"] = r.Probe
		cfg.Endpoints = append(cfg.Endpoints, pathdialer.Endpoint{Name: r.Name, Region: r.Name, Priority: i, Primary: i == 0, Services: svcs})
	}
	cfg.Probe = probe
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = s.ProbeInterval, s.ProbeTimeout, 0
	cfg.Engine.FailureThreshold = s.FailureThreshold
	cfg.Engine.MaxHealthAge = max(cfg.Engine.MaxHealthAge, 2*s.ProbeInterval)
	cfg.InflightGrace = s.InflightGrace
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg, nil
}

// ---- statistics and the table ----

// sample is one row's measurements over its runs.
type sample struct {
	vals  []float64
	never int // runs that never reached the goal within the bound
	bound time.Duration
}

func (s *sample) add(v float64)            { s.vals = append(s.vals, v) }
func (s *sample) miss(bound time.Duration) { s.never++; s.bound = bound }

// median returns the median of the values, treating "never" runs as +Inf.
// ok is false when the median itself is a "never".
func (s *sample) median() (float64, bool) {
	n := len(s.vals) + s.never
	if n == 0 {
		return 0, false
	}
	v := append([]float64(nil), s.vals...)
	sort.Float64s(v)
	mid := n / 2
	if n%2 == 1 {
		if mid >= len(v) {
			return 0, false
		}
		return v[mid], true
	}
	if mid >= len(v) {
		return 0, false
	}
	return (v[mid-1] + v[mid]) / 2, true
}

func (s *sample) runs() int { return len(s.vals) + s.never }

// fmtDur renders seconds.
func fmtDur(s *sample) string {
	m, ok := s.median()
	if !ok {
		return fmt.Sprintf("never (> %s, %d/%d runs)", s.bound, s.never, s.runs())
	}
	out := fmt.Sprintf("%.2f s", m)
	if s.never > 0 {
		out += fmt.Sprintf(" (%d/%d never)", s.never, s.runs())
	}
	return out
}

func fmtNum(s *sample, unit string) string {
	m, ok := s.median()
	if !ok {
		return "n/a"
	}
	if m >= 100 {
		return fmt.Sprintf("%.0f%s", m, unit)
	}
	return fmt.Sprintf("%.1f%s", m, unit)
}

// ratio renders peer / brokerpath.
func ratio(peer, bp *sample) string {
	p, ok1 := peer.median()
	b, ok2 := bp.median()
	switch {
	case !ok2 || b == 0:
		return "—"
	case !ok1:
		return fmt.Sprintf("> %.0f×", peer.bound.Seconds()/b)
	}
	return fmt.Sprintf("%.1f×", p/b)
}

// table is a markdown table.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	var sb strings.Builder
	line := func(cells []string) {
		sb.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	line(t.header)
	sep := make([]string, len(t.header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	return sb.String()
}
