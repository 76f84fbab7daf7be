package compare

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// DetectOptions control a detection run: how fast brokerpath's REST transport
// reaches the backup region after the primary fails, per kind of fault.
type DetectOptions struct {
	// Runs per scenario (figures: median, min, max).
	Runs int
	// Settings: brokerpath's probe settings (ProbeInterval, ProbeTimeout,
	// FailureThreshold, InflightGrace, OrderTimeout).
	Settings Settings
	// OrderGap is the pause between one order's answer and the next order
	// (orders flowing); zero means 10 ms.
	OrderGap time.Duration
	// H1: HTTP/1.1 instead of HTTP/2.
	H1 bool
	// SuspectAfter is pathdialer.Config.SuspectAfter (zero: its default,
	// ProbeTimeout/2; negative: suspicion off).
	SuspectAfter time.Duration
	// Only, when not empty, runs only the scenarios whose name contains it.
	Only string
	// Progress receives one line per step; nil discards.
	Progress func(format string, args ...any)
	// OnDown, optional, receives the last failed probes and state changes
	// whenever an endpoint is taken DOWN.
	OnDown func(recent string)
	// Trace: after each run, Progress receives its timeline (the Path's
	// events and the orders, in milliseconds from the fault), to see where
	// the time goes.
	Trace bool
}

// detectScenario is one row: a fault, with or without orders flowing.
type detectScenario struct {
	name    string
	fault   simbroker.Fault
	flowing bool
}

func detectScenarios() []detectScenario {
	return []detectScenario{
		{"blackhole, orders flowing", simbroker.Blackhole{}, true},
		{"blackhole, no orders", simbroker.Blackhole{}, false},
		{"refused and reset (listener closed, connections reset), orders flowing", simbroker.Down{}, true},
	}
}

// DetectRow is one scenario's figures (seconds).
type DetectRow struct {
	Scenario string
	Values   []float64 // fault → first order booked on the backup, each run
	Never    int       // runs that did not reach the backup within the bound
	// Void counts runs done again: the Path had already left the primary
	// (a spurious failover on a loaded host) when the fault was to begin.
	Void int
}

// errVoidRun: the Path was not on the primary when the fault was to begin.
var errVoidRun = errors.New("void run: the primary was no longer active when the fault was to begin (a spurious failover before it); run again")

// Detect measures, for each scenario, the time from the fault on every service
// of the primary region to the first order the backup region booked. With
// orders flowing, one order is placed after another (OrderGap apart); with no
// orders, the first order is placed as soon as the Path names the backup
// active (the time until it is booked included).
func Detect(o DetectOptions) ([]DetectRow, error) {
	if o.Runs <= 0 {
		o.Runs = 7
	}
	if o.OrderGap <= 0 {
		o.OrderGap = 10 * time.Millisecond
	}
	if o.Settings.ProbeInterval == 0 {
		o.Settings = DefaultSettings()
	}
	bound := 10*o.Settings.ProbeInterval + 2*time.Second
	var rows []DetectRow
	for _, sc := range detectScenarios() {
		if o.Only != "" && !strings.Contains(sc.name, o.Only) {
			continue
		}
		row := DetectRow{Scenario: sc.name}
		for i := 0; i < o.Runs; i++ {
			d, err := detectOnce(o, sc, bound)
			if errors.Is(err, errVoidRun) && row.Void < o.Runs {
				row.Void++ // not a detection: run it again
				i--
				if o.Progress != nil {
					o.Progress("detect: %s: %v", sc.name, err)
				}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s, run %d: %w", sc.name, i+1, err)
			}
			if d < 0 {
				row.Never++
			} else {
				row.Values = append(row.Values, d.Seconds())
			}
			if o.Progress != nil {
				o.Progress("detect: %s, run %d: %v", sc.name, i+1, d.Round(time.Millisecond))
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// DetectTable renders rows as markdown (milliseconds).
func DetectTable(rows []DetectRow) string {
	t := table{header: []string{"fault on every service of the primary", "fault → first order booked on the backup: median", "min–max", "every run (ms)"}}
	for _, r := range rows {
		v := append([]float64(nil), r.Values...)
		sort.Float64s(v)
		s := sample{vals: v, never: r.Never}
		m, ok := s.median()
		med := "never"
		if ok {
			med = fmt.Sprintf("%.0f ms", m*1000)
		}
		mm := "—"
		if len(v) > 0 {
			mm = fmt.Sprintf("%.0f–%.0f ms", v[0]*1000, v[len(v)-1]*1000)
		}
		var each []string
		for _, x := range v {
			each = append(each, fmt.Sprintf("%.0f", x*1000))
		}
		for range r.Never {
			each = append(each, "never")
		}
		if r.Void > 0 {
			each = append(each, fmt.Sprintf("(%d run(s) done again: the Path had already left the primary before the fault)", r.Void))
		}
		t.add(r.Scenario, med, mm, strings.Join(each, ", "))
	}
	return t.String()
}

// detectClient is brokerpath's REST client with its Path in view.
type detectClient struct {
	path  *pathdialer.Path
	order func(ctx context.Context, id string) (string, error)
	close func()
	// switches counts EventSwitch; downs counts endpoints taken DOWN; probeFails
	// counts failed probes.
	switches, downs, probeFails, degraded atomic.Int64
	mu                                    sync.Mutex
	log                                   []string // the events, probe successes left out
	trace                                 []traceLine
}

// traceLine is one line of a run's timeline.
type traceLine struct {
	at   time.Time
	text string
}

func (dc *detectClient) traceAdd(at time.Time, text string) {
	dc.mu.Lock()
	dc.trace = append(dc.trace, traceLine{at, text})
	dc.mu.Unlock()
}

// timeline renders the trace from 2 probe intervals before t0 on, in
// milliseconds from t0.
func (dc *detectClient) timeline(t0 time.Time, from time.Duration) string {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	lines := append([]traceLine(nil), dc.trace...)
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	var b strings.Builder
	for _, l := range lines {
		if d := l.at.Sub(t0); d >= -from {
			fmt.Fprintf(&b, "  %+8.1f ms  %s\n", float64(d.Microseconds())/1000, l.text)
		}
	}
	return b.String()
}

func buildDetectClient(a brokerAddrs, o DetectOptions) (*detectClient, error) {
	s := o.Settings
	cfg, err := pathConfig(a, s, func(r regionAddrs) map[string]string { return map[string]string{"rest": r.REST} })
	if err != nil {
		return nil, err
	}
	cfg.SuspectAfter = o.SuspectAfter
	rec, err := rest.NewReconciler(rest.ReconcileOptions{
		URL:     a.Regions[0].REST + "/v1/orders/" + rest.OrderIDPlaceholder,
		Header:  http.Header{"X-API-Key": {a.APIKey}},
		IDField: "client_order_id",
	})
	if err != nil {
		return nil, err
	}
	dc := &detectClient{}
	cfg.Reconcile = rec.Reconcile
	var recent []string // the last probe results and state changes, for a DOWN's report
	cfg.OnEvent = func(e pathdialer.Event) {
		if o.Trace {
			dc.traceAdd(e.Time, e.String())
		}
		if e.Kind != pathdialer.EventProbe || e.Err != nil {
			dc.mu.Lock()
			dc.log = append(dc.log, e.Time.Format("15:04:05.000")+" "+e.String())
			dc.mu.Unlock()
		}
		if o.OnDown != nil && (e.Kind == pathdialer.EventProbe && e.Err != nil || e.Kind == pathdialer.EventStateChange) {
			recent = append(recent, e.Time.Format("15:04:05.000")+" "+e.String())
			if len(recent) > 8 {
				recent = recent[1:]
			}
			if e.Kind == pathdialer.EventStateChange && e.State == engine.Down {
				o.OnDown(strings.Join(recent, "\n"))
			}
		}
		switch e.Kind {
		case pathdialer.EventSwitch:
			dc.switches.Add(1)
		case pathdialer.EventProbe:
			if e.Err != nil {
				dc.probeFails.Add(1)
			}
		case pathdialer.EventStateChange:
			switch e.State {
			case engine.Down:
				dc.downs.Add(1)
			case engine.Degraded:
				dc.degraded.Add(1)
			}
		}
	}
	p, err := pathdialer.New(cfg)
	if err != nil {
		return nil, err
	}
	tr, err := rest.NewTransport(p, rest.Options{TLSConfig: tlsConfig(a.CAPEM), DisableHTTP2: o.H1})
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	rec.SendLookupsVia(tr)
	c := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		_ = p.Close()
		return nil, err
	}
	base := a.Regions[0].REST
	dc.path = p
	dc.order = func(ctx context.Context, id string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, s.OrderTimeout)
		defer cancel()
		return doOrder(ctx, c, base, a.APIKey, id)
	}
	dc.close = func() { tr.CloseIdleConnections(); _ = p.Close() }
	return dc, nil
}

// detectOnce runs one scenario once: the time from the fault to the first
// order booked on the backup, or -1 when none was within bound.
func detectOnce(o DetectOptions, sc detectScenario, bound time.Duration) (time.Duration, error) {
	b, err := startBroker(nil)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	a := addrsOf(b)
	c, err := buildDetectClient(a, o)
	if err != nil {
		return 0, err
	}
	defer c.close()
	primary, backup := a.Regions[0].Name, a.Regions[1].Name
	prefix := uniq("dt")

	// One healthy order on the primary, then a steady state.
	if r, err := c.order(context.Background(), prefix+"-warm"); err != nil || r != primary {
		return 0, fmt.Errorf("no healthy order on the primary (region %q, %v)", r, err)
	}

	var (
		mu    sync.Mutex
		t0    time.Time
		first time.Time
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	var n atomic.Int64
	place := func() {
		id := fmt.Sprintf("%s-%d", prefix, n.Add(1))
		began := time.Now()
		region, err := c.order(context.Background(), id)
		now := time.Now()
		if o.Trace {
			c.traceAdd(began, "order "+id+" sent")
			c.traceAdd(now, fmt.Sprintf("order %s answered after %v: region %q, err %v", id, now.Sub(began).Round(100*time.Microsecond), region, err))
		}
		mu.Lock()
		if err == nil && region == backup && !t0.IsZero() && first.IsZero() {
			first = now
		}
		mu.Unlock()
	}
	if sc.flowing {
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				place()
				select {
				case <-stop:
					return
				case <-time.After(o.OrderGap):
				}
			}
		}()
	} else {
		close(done)
	}
	// Let probe rounds and orders settle into their rhythm (eight rounds: the
	// Path has measured the primary's probe latency, as it has in any process
	// that has run for a second); the fault lands at a random phase of the
	// probe cycle.
	time.Sleep(8*o.Settings.ProbeInterval + rand.N(o.Settings.ProbeInterval))
	if ep, _ := c.path.Active(); ep.Name != primary {
		close(stop)
		c.close()
		waitOrTimeout(done, 3*time.Second)
		return 0, errVoidRun
	}
	mu.Lock()
	t0 = time.Now()
	mu.Unlock()
	if o.Trace {
		c.traceAdd(t0, "fault at "+t0.Format("15:04:05.000000"))
	}
	for _, svc := range simbroker.Services {
		if err := b.SetFault(primary, svc, sc.fault); err != nil {
			close(stop)
			return 0, err
		}
	}
	end := t0.Add(bound)
	if !sc.flowing {
		// Place one order as soon as the backup is active.
		for {
			if ep, _ := c.path.Active(); ep.Name == backup {
				place()
				break
			}
			if time.Now().After(end) {
				break
			}
			select {
			case <-c.path.ActiveChanged():
			case <-time.After(time.Millisecond):
			}
		}
	}
	var res time.Duration
	for {
		mu.Lock()
		f := first
		mu.Unlock()
		if !f.IsZero() {
			res = f.Sub(t0)
			break
		}
		if time.Now().After(end) {
			res = -1
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	c.close()
	waitOrTimeout(done, 3*time.Second)
	if o.Progress != nil && o.Trace {
		o.Progress("detect: %s: %v; timeline (ms from the fault):\n%s", sc.name, res.Round(100*time.Microsecond), c.timeline(t0, 2*o.Settings.ProbeInterval))
	}
	if o.Progress != nil && res > 10*o.Settings.ProbeInterval {
		c.mu.Lock()
		o.Progress("detect: %s took %v; fault at %s; the Path's events:\n%s", sc.name, res, t0.Format("15:04:05.000"), strings.Join(c.log, "\n"))
		c.mu.Unlock()
	}
	return res, nil
}

// SoakResult is what a run without faults saw: every switch is spurious.
type SoakResult struct {
	Duration   time.Duration
	Orders     int64
	Failed     int64 // orders that did not succeed
	Switches   int64 // failovers (all spurious: nothing failed)
	Downs      int64 // endpoints taken DOWN
	Degraded   int64 // endpoints taken DEGRADED (one failed or slow probe, a failed order)
	ProbeFails int64 // failed probes (timeouts on a loaded host)
}

// Soak runs orders (OrderGap apart) against a healthy broker for d and counts
// what the Path did: with no fault, every switch is a spurious failover. With
// idle set it places no orders at all: only the probes decide (no order
// vouches for an endpoint whose probe fails).
func Soak(o DetectOptions, d time.Duration, idle bool) (SoakResult, error) {
	if o.OrderGap <= 0 {
		o.OrderGap = 10 * time.Millisecond
	}
	if o.Settings.ProbeInterval == 0 {
		o.Settings = DefaultSettings()
	}
	b, err := startBroker(nil)
	if err != nil {
		return SoakResult{}, err
	}
	defer b.Close()
	a := addrsOf(b)
	c, err := buildDetectClient(a, o)
	if err != nil {
		return SoakResult{}, err
	}
	defer c.close()
	prefix := uniq("soak")
	res := SoakResult{Duration: d}
	end := time.Now().Add(d)
	nextReport := time.Now().Add(time.Minute)
	for idle && time.Now().Before(end) {
		time.Sleep(min(time.Until(end), time.Minute))
		if o.Progress != nil {
			o.Progress("soak (no orders): %d switches, %d DOWN, %d DEGRADED, %d failed probes", c.switches.Load(), c.downs.Load(), c.degraded.Load(), c.probeFails.Load())
		}
	}
	for time.Now().Before(end) {
		res.Orders++
		if _, err := c.order(context.Background(), fmt.Sprintf("%s-%d", prefix, res.Orders)); err != nil {
			res.Failed++
			if errors.Is(err, pathdialer.ErrTradingHalted) {
				time.Sleep(o.Settings.ProbeInterval)
			}
		}
		if o.Progress != nil && time.Now().After(nextReport) {
			nextReport = nextReport.Add(time.Minute)
			o.Progress("soak: %d orders, %d failed, %d switches, %d DOWN, %d DEGRADED, %d failed probes", res.Orders, res.Failed, c.switches.Load(), c.downs.Load(), c.degraded.Load(), c.probeFails.Load())
		}
		time.Sleep(o.OrderGap)
	}
	res.Switches, res.Downs, res.Degraded, res.ProbeFails = c.switches.Load(), c.downs.Load(), c.degraded.Load(), c.probeFails.Load()
	return res, nil
}

// LoadAvg is the host's load average (1, 5, 15 minutes), for the tables.
func LoadAvg() string { return loadAvg() }
