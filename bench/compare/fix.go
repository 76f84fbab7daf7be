package compare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// fixApp records when each ExecutionReport arrived, and logon state.
type fixApp struct {
	mu     sync.Mutex
	acks   map[string]time.Time // ClOrdID → first ExecutionReport
	logged bool
}

func newFixApp() *fixApp { return &fixApp{acks: map[string]time.Time{}} }

func (a *fixApp) OnCreate(quickfix.SessionID) {}
func (a *fixApp) OnLogon(quickfix.SessionID) {
	a.mu.Lock()
	a.logged = true
	a.mu.Unlock()
}
func (a *fixApp) OnLogout(quickfix.SessionID) {
	a.mu.Lock()
	a.logged = false
	a.mu.Unlock()
}
func (a *fixApp) ToAdmin(*quickfix.Message, quickfix.SessionID)     {}
func (a *fixApp) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }
func (a *fixApp) FromAdmin(*quickfix.Message, quickfix.SessionID) quickfix.MessageRejectError {
	return nil
}
func (a *fixApp) FromApp(m *quickfix.Message, _ quickfix.SessionID) quickfix.MessageRejectError {
	if t, err := m.Header.GetString(35); err != nil || t != "8" {
		return nil
	}
	id, err := m.Body.GetString(11)
	if err != nil {
		return nil
	}
	now := time.Now()
	a.mu.Lock()
	if _, ok := a.acks[id]; !ok {
		a.acks[id] = now
	}
	a.mu.Unlock()
	return nil
}

func (a *fixApp) loggedOn() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logged
}

// firstAckIn returns the earliest ExecutionReport arrival, after t0, for an
// order the broker booked through region.
func (a *fixApp) firstAckIn(b *simbroker.Broker, region string, t0 time.Time) time.Time {
	booked := map[string]bool{}
	for _, o := range b.Book() {
		if o.Region == region {
			booked[o.ClientOrderID] = true
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var first time.Time
	for id, t := range a.acks {
		if booked[id] && t.After(t0) && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

func newOrder(clOrdID string) *quickfix.Message {
	m := quickfix.NewMessage()
	m.Header.SetString(35, "D")
	m.Body.SetString(11, clOrdID)
	m.Body.SetString(21, "1")
	m.Body.SetString(55, "EURUSD")
	m.Body.SetString(54, "1")
	m.Body.SetString(60, time.Now().UTC().Format("20060102-15:04:05.000"))
	m.Body.SetString(38, "100")
	m.Body.SetString(40, "1")
	return m
}

type fixResult struct {
	ack     time.Duration // < 0: never
	resends int           // orders the broker received again (PossDup) or twice
}

// fixFailover: orders every 50 ms while logged on; after 500 ms the
// primary region is blackholed; time until the first ExecutionReport for an
// order booked through the other region. Every row's HeartBtInt is
// s.FIXHeartBtInt: quickfix detects a silent connection from it (TestRequest
// after 1.2×, disconnect after another), and so does the broker's acceptor,
// which refuses a logon through the other region until the blackholed session
// has dropped (concurrent session policy: the broker does not fence). The
// quickfix peer reconnects every s.QuickfixReconnect; bp selects
// transports/fix instead.
func fixFailover(bp bool, s Settings, bound time.Duration) (fixResult, error) {
	b, err := startBroker(func(c *simbroker.Config) { c.TickInterval = 0 })
	if err != nil {
		return fixResult{}, err
	}
	defer b.Close()
	a := addrsOf(b)
	sid := b.FIXSessionID()
	app := newFixApp()

	qs := quickfix.NewSessionSettings()
	qs.Set("BeginString", sid.BeginString)
	qs.Set("SenderCompID", sid.SenderCompID)
	qs.Set("TargetCompID", sid.TargetCompID)
	qs.Set("HeartBtInt", fmt.Sprint(s.FIXHeartBtInt))
	st := quickfix.NewSettings()

	var send func(ctx context.Context, m *quickfix.Message) error
	var closeFn func()
	if bp {
		if _, err := st.AddSession(qs); err != nil {
			return fixResult{}, err
		}
		rec, err := fix.NewReconciler(fix.ReconcileOptions{AnswerTimeout: 2 * time.Second})
		if err != nil {
			return fixResult{}, err
		}
		cfg, err := pathConfig(a, s, func(r regionAddrs) map[string]string { return map[string]string{"fix": r.FIX} })
		if err != nil {
			return fixResult{}, err
		}
		cfg.Reconcile = rec.Reconcile
		cfg.ReconcileTimeout = 5 * time.Second
		p, err := pathdialer.New(cfg)
		if err != nil {
			return fixResult{}, err
		}
		if err := p.Start(context.Background()); err != nil {
			return fixResult{}, err
		}
		in, err := fix.NewInitiator(app, quickfix.NewMemoryStoreFactory(), st, quickfix.NewNullLogFactory(), p,
			fix.Options{Sequence: fix.SequenceContinue, Reconciler: rec, StopGrace: 200 * time.Millisecond})
		if err != nil {
			_ = p.Close()
			return fixResult{}, err
		}
		send = func(ctx context.Context, m *quickfix.Message) error { return in.SendOrder(ctx, m, sid) }
		closeFn = func() { _ = in.Close(); _ = p.Close() }
	} else {
		for i, r := range a.Regions[:2] {
			host, port, _ := net.SplitHostPort(r.FIX)
			suffix := ""
			if i > 0 {
				suffix = fmt.Sprint(i)
			}
			qs.Set("SocketConnectHost"+suffix, host)
			qs.Set("SocketConnectPort"+suffix, port)
		}
		qs.Set("ReconnectInterval", s.QuickfixReconnect.String())
		if _, err := st.AddSession(qs); err != nil {
			return fixResult{}, err
		}
		in, err := quickfix.NewInitiator(app, quickfix.NewMemoryStoreFactory(), st, quickfix.NewNullLogFactory())
		if err != nil {
			return fixResult{}, err
		}
		if err := in.Start(); err != nil {
			return fixResult{}, err
		}
		send = func(_ context.Context, m *quickfix.Message) error { return quickfix.SendToTarget(m, sid) }
		closeFn = in.Stop
	}
	stopped := false
	defer func() {
		if !stopped {
			closeFn()
		}
	}()

	deadline := time.Now().Add(5 * time.Second)
	for !app.loggedOn() {
		if time.Now().After(deadline) {
			return fixResult{}, errors.New("no FIX logon on the primary")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	prefix := uniq("fx")
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if !app.loggedOn() {
				continue // what a quickfix application does: send while logged on
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = send(ctx, newOrder(fmt.Sprintf("%s-%d", prefix, i)))
			cancel()
		}
	}()
	time.Sleep(500 * time.Millisecond)
	t0 := time.Now()
	if err := blackholeRegion(b, a.Regions[0].Name); err != nil {
		return fixResult{}, err
	}
	res := fixResult{ack: -1}
	for time.Since(t0) < bound {
		if f := app.firstAckIn(b, a.Regions[1].Name, t0); !f.IsZero() {
			res.ack = f.Sub(t0)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	waitOrTimeout(done, 3*time.Second)
	for _, r := range b.Audit().Orders() {
		if r.PossDup || r.Outcome == simbroker.OutcomeDuplicate {
			res.resends++
		}
	}
	stopped = true
	closeFn()
	return res, nil
}
