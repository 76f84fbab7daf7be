package fix

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"

	"github.com/brokerpath/brokerpath/internal/safetext"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// FIX tags and message types the package reads or writes.
const (
	tagClOrdID             quickfix.Tag = 11
	tagMsgType             quickfix.Tag = 35
	tagOrdStatus           quickfix.Tag = 39
	tagPossDupFlag         quickfix.Tag = 43
	tagSide                quickfix.Tag = 54
	tagSymbol              quickfix.Tag = 55
	tagExecTransType       quickfix.Tag = 20
	tagOrderID             quickfix.Tag = 37
	tagResetSeqNumFlag     quickfix.Tag = 141
	tagExecType            quickfix.Tag = 150
	tagOrdRejReason        quickfix.Tag = 103
	tagText                quickfix.Tag = 58
	tagBusinessRejectRefID quickfix.Tag = 379
	tagCxlRejReason        quickfix.Tag = 102
	tagAccount             quickfix.Tag = 1
	tagSenderCompID        quickfix.Tag = 49
	tagTargetCompID        quickfix.Tag = 56
	tagMsgSeqNum           quickfix.Tag = 34
	tagRefSeqNum           quickfix.Tag = 45
	tagRefMsgType          quickfix.Tag = 372
	tagBusinessRejectRsn   quickfix.Tag = 380
	tagSessionRejectRsn    quickfix.Tag = 373
	tagMassStatusReqID     quickfix.Tag = 584
	tagMassStatusReqType   quickfix.Tag = 585
	tagLastRptRequested    quickfix.Tag = 912

	msgTypeLogon              = "A"
	msgTypeNewOrderSingle     = "D"
	msgTypeCancelRequest      = "F"
	msgTypeCancelReplace      = "G"
	msgTypeNewOrderMultileg   = "AB"
	msgTypeMultilegReplace    = "AC"
	msgTypeExecutionReport    = "8"
	msgTypeOrderCancelReject  = "9"
	msgTypeBusinessReject     = "j"
	msgTypeOrderStatusRequest = "H"
	msgTypeMassStatusRequest  = "AF"
	msgTypeLogout             = "5"
	msgTypeReject             = "3"
)

// IsOrder reports whether a FIX MsgType is an order the package gates, never
// resends and reconciles: NewOrderSingle (D), OrderCancelRequest (F),
// OrderCancelReplaceRequest (G), NewOrderMultileg (AB) and
// MultilegOrderCancelReplace (AC).
func IsOrder(msgType string) bool {
	switch msgType {
	case msgTypeNewOrderSingle, msgTypeCancelRequest, msgTypeCancelReplace, msgTypeNewOrderMultileg, msgTypeMultilegReplace:
		return true
	}
	return false
}

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
	refs        sentRefs // (session, MsgSeqNum) of sent orders and status requests
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

// sessionState is what the package knows of one session's connection.
type sessionState struct {
	mu            sync.Mutex
	loggedOn      bool
	endpoint      string // endpoint of the current logon
	lastEndpoint  string // endpoint of the last successful logon
	resetNext     bool
	changed       chan struct{} // closed and replaced on every change
	lastLogonTime time.Time

	// Logon attempts: attempting is set when a Logon is sent and cleared by
	// the logon's success or when the relay concludes it failed.
	attempting  bool
	attemptOn   string // endpoint the pending Logon was sent to
	cause       LogonCause
	causeDetail string
	failures    int    // consecutive failed logons
	failOn      string // endpoint of those failures
	halted      error  // non-nil: logons halted (ErrLogonHalted)
	resume      chan struct{}

	// The counterparty's release of a session dropped without a Logout is
	// expected 2 × HeartBtInt after the last message heard on it (logon
	// backoffs are capped from then on).
	heartBt   time.Duration // HeartBtInt from the settings
	live      atomic.Bool   // logged on (read by the log hook without the lock)
	lastHeard atomic.Int64  // unix nanoseconds of the last message heard while logged on

	// leaving, while a preserve-mode farewell waits (farewell.go), is closed
	// when the counterparty's Logout arrives.
	leaving chan struct{}
}

func (s *sessionState) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
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
	closeRelays := func() {
		for _, r := range in.relays {
			r.close()
		}
	}
	qs, err := rewriteSettings(settings, &in.opts, func(sid quickfix.SessionID) (string, string, string, error) {
		r, err := newRelay(path, in.opts.Service, in.opts.TLSConfig, in.opts.DialTimeout, in.log.With("session", sid.String()))
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
		// A session of an earlier process may still be held by the broker.
		st.lastHeard.Store(time.Now().UnixNano())
		in.sessions[sid] = st
		return r.addr(), r.user, r.pass, nil
	})
	if err != nil {
		closeRelays()
		return nil, err
	}
	lf := MaskedLogFactory(logFactory).(maskedLogFactory)
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

// LoggedOn reports whether a session is logged on, and on which endpoint.
func (in *Initiator) LoggedOn(sessionID quickfix.SessionID) (endpoint string, ok bool) {
	if in == nil {
		return "", false
	}
	s := in.sessions[sessionID]
	if s == nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoint, s.loggedOn
}

// WaitLoggedOn waits until the session is logged on to endpoint (any endpoint
// when endpoint is "") or ctx ends.
func (in *Initiator) WaitLoggedOn(ctx context.Context, sessionID quickfix.SessionID, endpoint string) error {
	if in == nil {
		return ErrNoInitiator
	}
	return in.waitLoggedOn(ctx, sessionID, endpoint, nil)
}

// waitLoggedOn is WaitLoggedOn that also gives up when stale reports true
// (checked at every change of the session's state).
func (in *Initiator) waitLoggedOn(ctx context.Context, sessionID quickfix.SessionID, endpoint string, stale func() bool) error {
	s := in.sessions[sessionID]
	if s == nil {
		return fmt.Errorf("%w: %v", ErrUnknownSession, sessionID)
	}
	for {
		s.mu.Lock()
		ok := s.loggedOn && (endpoint == "" || s.endpoint == endpoint)
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		if in.closed.Load() {
			return ErrClosed
		}
		var moved <-chan struct{}
		if stale != nil {
			// With a hot standby the session waited on is not the one that
			// moves: the path switching must wake the wait by itself.
			moved = in.path.ActiveChanged()
			if stale() {
				return fmt.Errorf("fix: the path switched away from %q while waiting for the session's logon", endpoint)
			}
		}
		select {
		case <-ch:
		case <-moved:
			if in.path.ActiveChanged() == moved { // the path closed: it will not move again
				stale = nil
			}
		case <-ctx.Done():
			return fmt.Errorf("fix: session %v not logged on to %q: %w", sessionID, endpoint, ctx.Err())
		}
	}
}

// Stats returns the Initiator's counters (zero counters for a nil Initiator).
func (in *Initiator) Stats() *Stats {
	if in == nil {
		return new(Stats)
	}
	return &in.stats
}

// Send sends a message that is not an order (a status request, a quote, a
// market-data request) at once, without the submission gate: it is never held.
// Orders are refused with ErrNotOrder: send them with SendOrder.
func (in *Initiator) Send(msg quickfix.Messagable, sessionID quickfix.SessionID) error {
	if in == nil {
		return ErrNoInitiator
	}
	m := msg.ToMessage()
	mt, _ := m.Header.GetString(tagMsgType)
	if IsOrder(mt) {
		return fmt.Errorf("%w: MsgType %s goes through SendOrder", ErrNotOrder, mt)
	}
	if in.sessions[sessionID] == nil {
		return fmt.Errorf("%w: %v", ErrUnknownSession, sessionID)
	}
	return quickfix.SendToTarget(m, sessionID)
}

// SendOrder submits one order (NewOrderSingle, OrderCancelRequest,
// OrderCancelReplaceRequest, or a multileg equivalent; typed fix44/fix42
// messages or raw) through the Path's submission gate. It waits while the path
// is held (a switch or reconcile under way) until flow is released or ctx ends,
// fails at once with pathdialer.ErrTradingHalted while halted, and records the
// ClOrdID on a ticket. It then waits (bounded by ctx) for the session to be
// logged on to the ticket's endpoint and hands the order to quickfix, which
// sends it there and nowhere else.
//
// A nil error means the order left for the broker; its ticket is finished when
// the ExecutionReport (or OrderCancelReject, BusinessMessageReject) for the
// ClOrdID arrives, or handed to reconciliation if the path switches first. An
// error wrapping ErrNotSent means the order did not leave: send it again with
// the same ClOrdID. The order is never resent by this package or by quickfix.
func (in *Initiator) SendOrder(ctx context.Context, msg quickfix.Messagable, sessionID quickfix.SessionID) error {
	if in == nil {
		return ErrNoInitiator
	}
	if in.closed.Load() {
		return ErrClosed
	}
	m := msg.ToMessage()
	mt, _ := m.Header.GetString(tagMsgType)
	if !IsOrder(mt) {
		return fmt.Errorf("%w: MsgType %q", ErrNotOrder, mt)
	}
	clOrdID, _ := m.Body.GetString(tagClOrdID)
	if clOrdID == "" {
		return ErrNoClOrdID
	}
	s := in.sessions[sessionID]
	if s == nil {
		return fmt.Errorf("%w: %v", ErrUnknownSession, sessionID)
	}
	in.mu.Lock()
	_, dup := in.orders[clOrdID]
	if dup && in.resendGranted(clOrdID) {
		// Settled by another reconciler (a REST fallback of the
		// application's own, not this Initiator's): the record is stale, and
		// the Path granted this one resend.
		delete(in.orders, clOrdID)
		in.provisional.drop(clOrdID)
		dup = false
	}
	in.mu.Unlock()
	if dup {
		return fmt.Errorf("%w: %q", ErrDuplicateClOrdID, clOrdID)
	}
	if err := s.haltErr(); err != nil {
		in.stats.Orders.Add(1)
		in.stats.NotSent.Add(1)
		return fmt.Errorf("fix: order %q: %w", clOrdID, err)
	}
	in.stats.Orders.Add(1)
	// The ticket lives in the order's record (one allocation for both: the
	// gate allocates nothing).
	o := &order{clOrdID: clOrdID, msgType: mt, sessionID: sessionID, submitting: true}
	t := &o.tk
	o.ticket = t
	if err := in.path.AcquireInto(ctx, t, in.opts.Service, clOrdID); err != nil {
		in.stats.NotSent.Add(1)
		return fmt.Errorf("fix: order %q: %w", clOrdID, err)
	}
	if in.onAcquire != nil {
		in.onAcquire(t)
	}
	if in.byEP != nil {
		// Hot standby: the ticket's endpoint has a session of its own.
		sessionID = in.byEP[t.Endpoint]
		s = in.sessions[sessionID]
		o.sessionID = sessionID
	}
	fail := func(cause error) error {
		in.stats.NotSent.Add(1)
		t.Done() // nothing left the process: withdraw the ticket
		return notSent(clOrdID, cause)
	}
	switched := func() bool { _, gen := in.path.Active(); return gen != t.Generation || s.haltErr() != nil }
	if err := in.waitLoggedOn(ctx, sessionID, t.Endpoint, switched); err != nil {
		if herr := s.haltErr(); herr != nil {
			err = herr
		}
		return fail(err)
	}
	if in.opts.TokenTag != 0 {
		m.Body.SetString(in.opts.TokenTag, strconv.FormatUint(t.Generation, 10))
	}
	o.symbol, _ = m.Body.GetString(tagSymbol)
	o.side, _ = m.Body.GetString(tagSide)
	in.mu.Lock()
	if _, dup := in.orders[clOrdID]; dup {
		in.mu.Unlock()
		return fail(fmt.Errorf("%w: %q", ErrDuplicateClOrdID, clOrdID))
	}
	in.orders[clOrdID] = o
	in.mu.Unlock()
	// The decision the ticket was granted under must still hold when the
	// order is handed to the session (checked again in ToApp, the last point
	// before quickfix stores and writes it).
	if err := t.Valid(); err != nil {
		in.mu.Lock()
		delete(in.orders, clOrdID)
		in.mu.Unlock()
		return fail(err)
	}
	err := quickfix.SendToTarget(m, sessionID)
	in.mu.Lock()
	o.submitting = false
	early := o.early
	if o.expired != nil {
		err = o.expired
	}
	if err != nil || early {
		delete(in.orders, clOrdID)
	}
	in.mu.Unlock()
	if err != nil {
		return fail(err)
	}
	if early { // the answer overtook SendToTarget's return
		in.stats.Answered.Add(1)
		t.Done()
	}
	return nil
}

// answer is one message answering an order, for a reconcile.
type answer struct {
	clOrdID string
	msg     *quickfix.Message
}

// recentAnswers remembers the last answer of the most recent orders (bounded),
// so that an order whose answer arrives after its ticket was handed to
// reconciliation (a PossDup ExecutionReport recovered by resend) is still settled.
type recentAnswers struct {
	m    map[string]*quickfix.Message
	ring [recentAnswersMax]string
	next int
}

const recentAnswersMax = 4096

func (r *recentAnswers) put(id string, msg *quickfix.Message) {
	if _, ok := r.m[id]; !ok {
		if old := r.ring[r.next]; old != "" {
			delete(r.m, old)
		}
		r.ring[r.next] = id
		r.next = (r.next + 1) % recentAnswersMax
	}
	r.m[id] = msg
}

// answered settles the order's ticket on a definitive answer (msg, when it
// carries a fate, is remembered for reconciliation).
func (in *Initiator) answered(clOrdID string, msg *quickfix.Message) {
	in.mu.Lock()
	if msg != nil {
		in.recent.put(clOrdID, msg)
	}
	o := in.orders[clOrdID]
	settle := o != nil && !o.submitting
	if settle {
		delete(in.orders, clOrdID)
	} else if o != nil {
		o.early = true
	}
	in.mu.Unlock()
	if settle {
		in.stats.Answered.Add(1)
		o.ticket.Done()
	}
}

// deliver hands a status answer to a waiting reconcile.
func (in *Initiator) deliver(clOrdID string, msg *quickfix.Message) {
	in.mu.Lock()
	ch := in.waiters[clOrdID]
	in.mu.Unlock()
	if ch != nil {
		select {
		case ch <- answer{clOrdID, msg}:
		default:
		}
	}
}

// deliverRef hands a reject to whoever waits for what it refers to.
func (in *Initiator) deliverRef(ref refVal, msg *quickfix.Message) {
	if ref.msgType == msgTypeMassStatusRequest {
		in.deliverMass(ref.clOrdID, msg)
		return
	}
	in.deliver(ref.clOrdID, msg)
}

// deliverMass hands one mass-status answer to the waiting reconcile.
func (in *Initiator) deliverMass(reqID string, msg *quickfix.Message) {
	in.mu.Lock()
	ch := in.mass[reqID]
	in.mu.Unlock()
	if ch != nil {
		select {
		case ch <- msg:
		default:
		}
	}
}

// guardApp wraps the user's Application: it gates and guards orders, tracks
// logons and endpoints, applies the sequence model and routes answers.
type guardApp struct{ in *Initiator }

var _ quickfix.Application = (*guardApp)(nil)

func (a *guardApp) OnCreate(sid quickfix.SessionID) { a.in.user.OnCreate(sid) }

func (a *guardApp) OnLogon(sid quickfix.SessionID) {
	in := a.in
	if s := in.sessions[sid]; s != nil {
		ep, _, _ := in.relays[sid].current()
		s.mu.Lock()
		s.loggedOn, s.endpoint, s.lastEndpoint, s.lastLogonTime = true, ep, ep, time.Now()
		s.live.Store(true)
		s.lastHeard.Store(s.lastLogonTime.UnixNano())
		s.attempting, s.failures, s.cause, s.causeDetail = false, 0, 0, ""
		s.notify()
		s.mu.Unlock()
		in.stats.Logons.Add(1)
		in.log.Info("fix: logged on", "session", sid.String(), "endpoint", ep)
	}
	in.user.OnLogon(sid)
}

func (a *guardApp) OnLogout(sid quickfix.SessionID) {
	in := a.in
	if s := in.sessions[sid]; s != nil {
		s.mu.Lock()
		s.loggedOn, s.endpoint = false, ""
		s.live.Store(false)
		s.notify()
		s.mu.Unlock()
	}
	// Orders of this session still waiting for their answer may or may not have
	// reached the broker: hand them to reconciliation now, so they are settled
	// even when the session logs on again on the same endpoint (no switch). The
	// records stay: reconcile asks about them, and a late answer is recognised.
	// Each order is handed over once, however often the session drops.
	in.mu.Lock()
	var lost []*order
	for _, o := range in.orders {
		if o.sessionID == sid && !o.submitting && !o.unknown {
			o.unknown = true
			lost = append(lost, o)
		}
	}
	in.mu.Unlock()
	for _, o := range lost {
		o.ticket.Unknown(fmt.Errorf("%w: order %q", ErrSessionLost, o.clOrdID))
	}
	in.user.OnLogout(sid)
}

func (a *guardApp) ToAdmin(msg *quickfix.Message, sid quickfix.SessionID) {
	in := a.in
	mt, _ := msg.Header.GetString(tagMsgType)
	s := in.sessions[sid]
	switch {
	case s == nil:
	case mt == msgTypeLogon:
		reset := in.opts.Sequence == SequenceResetOnLogon
		if in.opts.Sequence == SequenceResetOnSwitch {
			target := in.target(sid)
			s.mu.Lock()
			reset = s.lastEndpoint != "" && s.lastEndpoint != target
			s.mu.Unlock()
		}
		if reset {
			// quickfix resets the store and renumbers this logon to 1.
			msg.Body.SetField(tagResetSeqNumFlag, quickfix.FIXBoolean(true))
			in.stats.Resets.Add(1)
			in.log.Info("fix: logon resets sequence numbers", "session", sid.String(), "model", in.opts.Sequence.String())
		}
		ep, _, _ := in.relays[sid].current()
		s.mu.Lock()
		s.attempting, s.attemptOn, s.cause, s.causeDetail = true, ep, 0, ""
		s.mu.Unlock()
	case mt == msgTypeLogout:
		// quickfix refuses the counterparty's Logon answer (e.g. "MsgSeqNum too
		// low, expecting 7 but received 1"): the counterparty restarted.
		text, _ := msg.Body.GetString(tagText)
		s.mu.Lock()
		if s.attempting && s.cause == 0 && strings.Contains(strings.ToLower(text), "msgseqnum too low") {
			s.cause, s.causeDetail = LogonSeqTooLow, "we logged out: "+safetext.Bound(text)
		}
		s.mu.Unlock()
	}
	in.user.ToAdmin(msg, sid)
}

// diagnoseLogout classifies the counterparty's Logout sent in answer to a Logon.
func diagnoseLogout(text string) LogonCause {
	l := strings.ToLower(text)
	switch {
	case strings.Contains(l, "msgseqnum") || strings.Contains(l, "sequence") || strings.Contains(l, "seqnum"):
		return LogonSeqTooHigh
	case strings.Contains(l, "passw") || strings.Contains(l, "credential") || strings.Contains(l, "auth") ||
		strings.Contains(l, "user") || strings.Contains(l, "login failed") || strings.Contains(l, "logon failed"):
		return LogonCredentials
	}
	return LogonRejected
}

func isPossDup(msg *quickfix.Message) bool {
	v, err := msg.Header.GetBool(tagPossDupFlag)
	return err == nil && v
}

func (a *guardApp) ToApp(msg *quickfix.Message, sid quickfix.SessionID) error {
	in := a.in
	mt, _ := msg.Header.GetString(tagMsgType)
	if IsOrder(mt) {
		clOrdID, _ := msg.Body.GetString(tagClOrdID)
		if isPossDup(msg) {
			// quickfix is answering a ResendRequest: never replay an order,
			// possibly into another region. Gap-fill it and reconcile.
			in.refuseResend(sid, clOrdID, mt)
			return quickfix.ErrDoNotSend
		}
		in.mu.Lock()
		o := in.orders[clOrdID]
		gated := o != nil && o.submitting
		in.mu.Unlock()
		if !gated && !in.opts.AllowUngatedOrders {
			in.stats.UngatedRefused.Add(1)
			in.log.Warn("fix: order not sent through SendOrder refused", "session", sid.String(), "clordid", clOrdID)
			return quickfix.ErrDoNotSend
		}
		if gated {
			ep, _, _ := in.relays[sid].current()
			if ep != o.ticket.Endpoint {
				return fmt.Errorf("%w: session is on endpoint %q, ticket is for %q", quickfix.ErrDoNotSend, ep, o.ticket.Endpoint)
			}
			if err := o.ticket.Valid(); err != nil {
				in.mu.Lock()
				o.expired = err
				in.mu.Unlock()
				return fmt.Errorf("%w: %w", quickfix.ErrDoNotSend, err)
			}
		}
	}
	if err := in.user.ToApp(msg, sid); err != nil {
		return err
	}
	if IsOrder(mt) || mt == msgTypeOrderStatusRequest || mt == msgTypeMassStatusRequest {
		if seq, err := msg.Header.GetInt(tagMsgSeqNum); err == nil {
			clOrdID, _ := msg.Body.GetString(tagClOrdID)
			if mt == msgTypeMassStatusRequest {
				clOrdID, _ = msg.Body.GetString(tagMassStatusReqID)
			}
			in.mu.Lock()
			in.refs.put(refKey{sid, seq}, refVal{clOrdID: clOrdID, msgType: mt})
			in.mu.Unlock()
		}
	}
	return nil
}

func (in *Initiator) refuseResend(sid quickfix.SessionID, clOrdID, mt string) {
	in.stats.RefusedResends.Add(1)
	// The record stays: reconcile needs its symbol and side to ask about it.
	in.mu.Lock()
	o := in.orders[clOrdID]
	hand := o != nil && !o.submitting && !o.unknown
	if hand {
		o.unknown = true
	}
	in.mu.Unlock()
	if hand {
		o.ticket.Unknown(resendRefused(clOrdID, mt))
	}
	in.log.Warn("fix: resend of an order refused; gap-filled and handed to reconciliation", "session", sid.String(), "clordid", clOrdID, "msgtype", mt)
	if in.opts.OnRefusedResend != nil {
		in.opts.OnRefusedResend(sid, clOrdID, mt)
	}
}

func (a *guardApp) FromAdmin(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	in := a.in
	mt, _ := msg.Header.GetString(tagMsgType)
	switch mt {
	case msgTypeLogout:
		if s := in.sessions[sid]; s != nil {
			text, _ := msg.Body.GetString(tagText)
			s.mu.Lock()
			if s.attempting && s.cause == 0 {
				s.cause, s.causeDetail = diagnoseLogout(text), "counterparty logged out: "+safetext.Bound(text)
			}
			s.mu.Unlock()
		}
	case msgTypeReject:
		// A session-level Reject of one of our status requests or orders.
		if ref, ok := in.refOf(msg, sid); ok {
			in.deliverRef(ref, msg)
			if IsOrder(ref.msgType) {
				in.answered(ref.clOrdID, nil)
			}
		}
	}
	return in.user.FromAdmin(msg, sid)
}

// refOf finds what a reject refers to: RefSeqNum (45) among the messages this
// Initiator sent on the session, checked against RefMsgType (372) when present.
func (in *Initiator) refOf(msg *quickfix.Message, sid quickfix.SessionID) (refVal, bool) {
	seq, err := msg.Body.GetInt(tagRefSeqNum)
	if err != nil {
		return refVal{}, false
	}
	in.mu.Lock()
	v, ok := in.refs.m[refKey{sid, seq}]
	in.mu.Unlock()
	if !ok {
		return refVal{}, false
	}
	if rmt, err := msg.Body.GetString(tagRefMsgType); err == nil && rmt != v.msgType {
		return refVal{}, false
	}
	return v, true
}

func (a *guardApp) FromApp(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	in := a.in
	mt, _ := msg.Header.GetString(tagMsgType)
	switch mt {
	case msgTypeExecutionReport:
		if id, _ := msg.Body.GetString(tagMassStatusReqID); id != "" {
			in.deliverMass(id, msg)
		}
		clOrdID, _ := msg.Body.GetString(tagClOrdID)
		if clOrdID != "" {
			in.deliver(clOrdID, msg)
			if !isStatusReport(msg) {
				in.answered(clOrdID, msg)
			}
		}
	case msgTypeOrderCancelReject:
		if clOrdID, _ := msg.Body.GetString(tagClOrdID); clOrdID != "" {
			in.answered(clOrdID, nil)
		}
	case msgTypeBusinessReject:
		// Match by RefSeqNum + RefMsgType (what every acceptor sends; quickfix
		// itself sends no BusinessRejectRefID), else by BusinessRejectRefID.
		refMT, _ := msg.Body.GetString(tagRefMsgType)
		if ref, ok := in.refOf(msg, sid); ok {
			in.deliverRef(ref, msg)
			if IsOrder(ref.msgType) { // the order itself was rejected
				in.answered(ref.clOrdID, msg)
			}
		} else if id, _ := msg.Body.GetString(tagBusinessRejectRefID); id != "" {
			in.deliver(id, msg)
			if refMT == "" || IsOrder(refMT) {
				in.answered(id, msg)
			}
		}
	}
	return in.user.FromApp(msg, sid)
}

// isStatusReport: an ExecutionReport answering a status request (FIX 4.4
// ExecType=I, FIX 4.2 ExecTransType=3) settles nothing by itself.
func isStatusReport(msg *quickfix.Message) bool {
	if et, _ := msg.Body.GetString(tagExecType); et == "I" {
		return true
	}
	tt, _ := msg.Body.GetString(tagExecTransType)
	return tt == "3"
}

// refKey names one message this Initiator sent.
type refKey struct {
	sid quickfix.SessionID
	seq int
}

type refVal struct{ clOrdID, msgType string }

// sentRefs remembers the MsgSeqNum of the most recent orders and status
// requests per session (bounded), so a reject that carries only RefSeqNum is
// matched to its order.
type sentRefs struct {
	m    map[refKey]refVal
	ring [recentAnswersMax]refKey
	n    int
}

func (r *sentRefs) put(k refKey, v refVal) {
	if _, ok := r.m[k]; !ok {
		if r.n >= recentAnswersMax {
			delete(r.m, r.ring[r.n%recentAnswersMax])
		}
		r.ring[r.n%recentAnswersMax] = k
		r.n++
	}
	r.m[k] = v
}

// resendGranted: the Path found clOrdID finally NOT_RECEIVED and granted its
// one resend (Path.MayResend), whichever reconciler settled it.
func (in *Initiator) resendGranted(clOrdID string) bool {
	v, ok := in.path.Verdict(clOrdID)
	return ok && v.Final && v.Fate == pathdialer.FateNotReceived && !v.ResentAt.IsZero()
}
