// Package drillflow fills a drill.Input from an internal/orderflow run and
// reads the simulated broker's per-region WebSocket counters, so the demo
// (examples/orderclient -report) and tests can write a drill report without
// package drill knowing either. It is for demos, drills and tests: like
// orderflow, it pulls internal/simbroker into the import graph.
package drillflow

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/orderflow"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/observe/drill"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// Run is what a driver knows about its drill besides the Client.
type Run struct {
	Title              string
	Fault              string
	FaultAt, RecoverAt time.Time
	End                time.Time
	Primary, Survivor  string
	Summary            orderflow.Summary
	Samples            []drill.Sample
	Budget             drill.Budget
	Population         []ws.Stats
	// Seed of the simulated broker (empty: not recorded). Commit, when
	// empty, is read from the build information or from git.
	Seed, Commit string
}

// Input builds a drill.Input from the Client's Recorder (every Path event
// and note), its orders and the run r.
func Input(c *orderflow.Client, r Run) drill.Input {
	rec := c.Recorder()
	in := drill.Input{
		Title: r.Title, Start: rec.Start(), End: r.End,
		Fault: r.Fault, FaultAt: r.FaultAt, RecoverAt: r.RecoverAt,
		Primary: r.Primary, Survivor: r.Survivor,
		Samples: r.Samples, Budget: r.Budget, Population: r.Population,
		Checked: r.Summary.Checked, Violations: r.Summary.Violations,
		Seed: r.Seed, Commit: r.Commit,
	}
	if in.Commit == "" {
		in.Commit = commit()
	}
	if len(r.Summary.Streams) > 0 {
		st := &drill.StreamSeen{}
		for _, s := range r.Summary.Streams {
			st.Messages += s.Messages
			st.Missed += s.Missed
			st.Snapshots += s.Snapshots
			st.LongestSilence = max(st.LongestSilence, s.MaxStall)
		}
		in.Stream = st
	}
	for _, ep := range c.Path().Endpoints() {
		in.Endpoints = append(in.Endpoints, ep.Name)
	}
	for _, e := range rec.Entries() {
		if e.Event != nil {
			in.Events = append(in.Events, *e.Event)
			continue
		}
		in.Notes = append(in.Notes, drill.Note{Time: e.Time, Source: e.Source, Text: e.Note})
	}
	for _, o := range c.Orders() {
		in.Orders = append(in.Orders, drill.Order{
			ID: o.ClOrdID, Transport: o.Transport, PlacedAt: o.PlacedAt,
			NotSent: o.NotSent != "" && !o.Acked, Unknown: o.Unknown,
			Acked: o.Acked, Rejected: o.Rejected, AckedAt: o.AckedAt, AckEndpoint: o.AckEndpoint,
		})
	}
	return in
}

// commit names the source revision: the build's VCS stamp, else git's HEAD
// (go run does not stamp), else "".
func commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if dirty {
				rev += " (modified)"
			}
			return rev
		}
	}
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += " (modified)"
	}
	return rev
}

// BrokerWS returns a drillkit.Sources.Broker reading every region's WSStats.
func BrokerWS(b *simbroker.Broker, regions ...string) func() map[string]drill.RegionWS {
	return func() map[string]drill.RegionWS {
		m := make(map[string]drill.RegionWS, len(regions))
		for _, name := range regions {
			rg := b.Region(name)
			if rg == nil {
				continue
			}
			s := rg.WSStats()
			m[name] = drill.RegionWS{Attempts: s.Attempts, Handshakes: s.Handshakes, OverBudget: s.OverBudget,
				Unavailable: s.Unavailable, Resumes: s.Resumes, Snapshots: s.Snapshots}
		}
		return m
	}
}

// StreamConfig returns the configuration of one population stream for the
// broker cfg describes: its streams, credentials and TLS roots, a
// full-jitter backoff with base (cap 20×), and the client's liveness timing.
func StreamConfig(cfg orderflow.Config, base time.Duration) ws.StreamConfig {
	sc := ws.DefaultStreamConfig()
	sc.Streams = cfg.Streams
	hdr := http.Header{}
	hdr.Set(cfg.APIKeyHeader, cfg.APIKey)
	sc.Header = hdr
	sc.Dialer = &websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}, HandshakeTimeout: time.Second}
	sc.Backoff = ws.Backoff{Base: base, Cap: 20 * base}
	sc.FailuresBeforeFallback = 1
	sc.DialTimeout = time.Second
	sc.PingInterval, sc.PongTimeout = 500*time.Millisecond, 500*time.Millisecond
	sc.MigrateTimeout = 2 * time.Second
	sc.MaxRetryAfter = 2 * time.Second
	return sc
}
