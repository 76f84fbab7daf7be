package fix

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"

	"github.com/brokerpath/brokerpath/internal/safetext"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// Initiator is a started quickfix initiator whose sessions reach the broker over
// a pathdialer.Path. Create it with NewInitiator; Close stops it. All methods are
// safe for concurrent use.
type Initiator struct {
	qi       *quickfix.Initiator
	path     *pathdialer.Path
	opts     Options
	log      *slog.Logger
	relays   map[quickfix.SessionID]*relay
	sessions map[quickfix.SessionID]*sessionState
	user     quickfix.Application
	rec      *Reconciler
	// Hot standby (Options.Standby): each session's endpoint, and the
	// session of each endpoint. Empty without a standby.
	pinned map[quickfix.SessionID]string
	byEP   map[string]quickfix.SessionID

	mu      sync.Mutex
	orders  map[string]*order                 // by ClOrdID: sent, answer pending
	waiters map[string]chan answer            // by ClOrdID: reconcile waiting for a status answer
	mass    map[string]chan *quickfix.Message // by MassStatusReqID: reconcile waiting for a mass status
	recent  recentAnswers                     // last answers, for orders answered after they were handed over
	// provisional: orders settled NOT_RECEIVED, kept for the Path's re-query
	provisional provisionalOrders
	// withdrawn: orders SendOrder gave up before quickfix had them (never
	// written), kept so a reconcile handed their tickets settles them
	// NOT_RECEIVED instead of finding no record to ask about.
	withdrawn provisionalOrders
	refs      sentRefs // (session, MsgSeqNum) of sent orders and status requests
	// unsupported: sessions (on an endpoint) whose counterparty answered an
	// OrderStatusRequest with "unsupported message type".
	unsupported map[unsupportedKey]string

	stats     Stats
	massSeq   atomic.Uint64
	onAcquire func(*pathdialer.Ticket) // tests only: sees each ticket as granted
	closeOnce sync.Once
	closed    atomic.Bool
}

// Stats counts what the Initiator did.
type Stats struct {
	// Orders sent through SendOrder; NotSent of them never left the process.
	Orders, NotSent atomic.Uint64
	// Answered: orders settled by an ExecutionReport, OrderCancelReject or
	// BusinessMessageReject.
	Answered atomic.Uint64
	// RefusedResends: orders the counterparty asked for again that were
	// gap-filled instead of resent.
	RefusedResends atomic.Uint64
	// UngatedRefused: orders refused because they did not come through SendOrder.
	UngatedRefused atomic.Uint64
	// Resets: logons sent with ResetSeqNumFlag=Y because the endpoint changed.
	Resets atomic.Uint64
	// Logons counts successful logons.
	Logons atomic.Uint64
}

// order is one order sent through SendOrder whose answer is pending.
type order struct {
	clOrdID    string
	msgType    string
	sessionID  quickfix.SessionID
	symbol     string
	side       string
	ticket     *pathdialer.Ticket // &tk
	tk         pathdialer.Ticket
	submitting bool  // SendOrder's SendToTarget call is in progress
	early      bool  // answered while submitting: finish when SendToTarget returns
	unknown    bool  // handed to reconciliation (Ticket.Unknown called once)
	expired    error // ToApp refused it because the ticket's decision lapsed
}

// NewInitiator builds and starts a quickfix initiator for app, with quickfix's
// own arguments plus the Path. Every session in settings connects through an
// in-process relay on 127.0.0.1 that is spliced to the active endpoint's
// Options.Service address through path.Dial: the settings name no address
// (SocketConnectHost/Port are refused, or replaced with
// Options.ReplaceSocketConnect), and
// ReconnectInterval is set from Options. The user's settings are not modified.
//
// It refuses, with ErrInvalidOptions, settings that cannot work through the
// relay (quickfix TLS or proxy settings, ResetOnLogon/Logout/Disconnect=Y, a
// BeginString other than FIX.4.2–4.4) and options without a SequenceModel.
//
// The returned Initiator is started; the Path must be started too for sessions
// to connect (until then the relay closes each connection and quickfix retries).
func NewInitiator(app quickfix.Application, storeFactory quickfix.MessageStoreFactory, settings *quickfix.Settings,
	logFactory quickfix.LogFactory, path *pathdialer.Path, opts Options) (*Initiator, error) {
	if app == nil || storeFactory == nil || logFactory == nil || path == nil {
		return nil, fmt.Errorf("%w: app, store factory, log factory and path are required", ErrInvalidOptions)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := checkEndpoints(path, opts.Service); err != nil {
		return nil, err
	}
	if opts.Standby != nil {
		if settings == nil {
			return nil, fmt.Errorf("%w: settings are nil", ErrInvalidOptions)
		}
		if err := opts.Standby.check(path, settings); err != nil {
			return nil, err
		}
	}
	in := newInitiator(app, path, opts)
	closeRelays := func() {
		for _, r := range in.relays {
			r.close()
		}
	}
	qs, err := rewriteSettings(settings, &in.opts, func(sid quickfix.SessionID) (string, string, string, error) {
		return in.addSession(sid, settings)
	})
	if err != nil {
		closeRelays()
		return nil, err
	}
	lf := maskedLogs(logFactory).(maskedLogFactory)
	lf.incoming = in.sawIncoming
	qi, err := quickfix.NewInitiator(&guardApp{in: in}, lockedStoreFactory{storeFactory}, qs, lf)
	if err != nil {
		closeRelays()
		return nil, fmt.Errorf("fix: quickfix initiator: %w", err)
	}
	in.qi = qi
	for _, r := range in.relays {
		r.start()
	}
	if err := qi.Start(); err != nil {
		qi.Stop()
		closeRelays()
		return nil, fmt.Errorf("fix: starting quickfix initiator: %w", err)
	}
	if opts.Reconciler != nil {
		opts.Reconciler.bind(in)
	}
	return in, nil
}

// newInitiator returns the Initiator's state, with no session yet.
func newInitiator(app quickfix.Application, path *pathdialer.Path, opts Options) *Initiator {
	in := &Initiator{
		path:     path,
		opts:     opts,
		log:      safetext.Logger(opts.Logger), // counterparty text escaped and cut
		relays:   make(map[quickfix.SessionID]*relay),
		sessions: make(map[quickfix.SessionID]*sessionState),
		user:     app,
		orders:   make(map[string]*order),
		waiters:  make(map[string]chan answer),
		mass:     make(map[string]chan *quickfix.Message),
		recent:   recentAnswers{m: make(map[string]*quickfix.Message)},
		refs:     sentRefs{m: make(map[refKey]refVal)},

		unsupported: make(map[unsupportedKey]string),
	}
	if sb := opts.Standby; sb != nil {
		in.pinned, in.byEP = map[quickfix.SessionID]string{}, map[string]quickfix.SessionID{}
		for ep, sid := range sb.Sessions {
			in.pinned[sid], in.byEP[ep] = ep, sid
		}
	}
	return in
}

// addSession gives session sid its relay (not started) and its state, and
// returns what quickfix's settings for the session must name: the relay's
// address and SOCKS credentials.
func (in *Initiator) addSession(sid quickfix.SessionID, settings *quickfix.Settings) (addr, user, pass string, err error) {
	r, err := newRelay(in.path, in.opts.Service, in.opts.TLSConfig, in.opts.DialTimeout, in.log.With("session", sid.String()))
	if err != nil {
		return "", "", "", err
	}
	r.before = func(ctx context.Context) error { return in.beforeDial(ctx, sid) }
	if len(in.opts.PreserveLogout) > 0 {
		r.farewell = func(deadline time.Time) error { return in.sayFarewell(sid, deadline) }
	}
	r.maxMsg = in.opts.MaxMessageSize
	r.interval = in.opts.ReconnectInterval
	r.pinned = in.pinned[sid]
	in.relays[sid] = r
	st := &sessionState{changed: make(chan struct{}), resume: make(chan struct{})}
	if ss, ok := settings.SessionSettings()[sid]; ok {
		if hb, err := ss.IntSetting(config.HeartBtInt); err == nil && hb > 0 {
			st.heartBt = time.Duration(hb) * time.Second
		}
	}
	r.codWithin = codWithin(st.heartBt)
	// A session of an earlier process may still be held by the broker.
	st.lastHeard.Store(time.Now().UnixNano())
	in.sessions[sid] = st
	return r.addr(), r.user, r.pass, nil
}

// Close logs every session out (waiting at most Options.StopGrace for the
// counterparty), cuts the relayed connections, stops quickfix and every
// goroutine the Initiator started, and unregisters its sessions from quickfix's
// global registry. Orders still awaiting an answer keep their tickets in flight
// (the Path hands them to reconciliation). Close is idempotent.
func (in *Initiator) Close() error {
	if in == nil {
		return ErrNoInitiator
	}
	in.closeOnce.Do(func() {
		in.closed.Store(true)
		if in.rec != nil {
			in.rec.unbind(in)
		}
		done := make(chan struct{})
		go func() { in.qi.Stop(); close(done) }()
		t := time.NewTimer(in.opts.StopGrace)
		select {
		case <-done:
		case <-t.C:
			for _, r := range in.relays {
				r.closeConns()
			}
			<-done
		}
		t.Stop()
		for _, r := range in.relays {
			r.close()
		}
	})
	return nil
}

// target is the endpoint a session connects to: its own with a hot standby,
// else the path's active endpoint.
func (in *Initiator) target(sid quickfix.SessionID) string {
	if ep, ok := in.pinned[sid]; ok {
		return ep
	}
	a, _ := in.path.Active()
	return a.Name
}

// askOn is the order o as the reconcile on endpoint to asks about it: with a
// hot standby, over the session of that endpoint (a copy; o is shared).
func (in *Initiator) askOn(o *order, to string) *order {
	sid, ok := in.byEP[to]
	if !ok || sid == o.sessionID {
		return o
	}
	return &order{clOrdID: o.clOrdID, msgType: o.msgType, sessionID: sid, symbol: o.symbol, side: o.side, unknown: o.unknown}
}

// SessionIDs returns the Initiator's sessions.
func (in *Initiator) SessionIDs() []quickfix.SessionID {
	if in == nil {
		return nil
	}
	ids := make([]quickfix.SessionID, 0, len(in.sessions))
	for sid := range in.sessions {
		ids = append(ids, sid)
	}
	return ids
}

// Stats returns the Initiator's counters (zero counters for a nil Initiator).
func (in *Initiator) Stats() *Stats {
	if in == nil {
		return new(Stats)
	}
	return &in.stats
}
