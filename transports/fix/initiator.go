package fix

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfixgo/quickfix"

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

	mu      sync.Mutex
	orders  map[string]*order      // by ClOrdID: sent, answer pending
	waiters map[string]chan answer // by ClOrdID: reconcile waiting for a status answer
	recent  recentAnswers          // last answers, for orders answered after they were handed over

	stats     Stats
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
	ticket     *pathdialer.Ticket
	submitting bool // SendOrder's SendToTarget call is in progress
	early      bool // answered while submitting: finish when SendToTarget returns
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
}

func (s *sessionState) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// NewInitiator builds and starts a quickfix initiator for app, with quickfix's
// own arguments plus the Path. Every session in settings connects through an
// in-process relay on 127.0.0.1 that is spliced to the active endpoint's
// Options.Service address through path.Dial: the settings name no address
// (SocketConnectHost/Port, if present, are overwritten), and
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
	in := &Initiator{
		path:     path,
		opts:     opts,
		log:      opts.Logger,
		relays:   make(map[quickfix.SessionID]*relay),
		sessions: make(map[quickfix.SessionID]*sessionState),
		user:     app,
		orders:   make(map[string]*order),
		waiters:  make(map[string]chan answer),
		recent:   recentAnswers{m: make(map[string]*quickfix.Message)},
	}
	closeRelays := func() {
		for _, r := range in.relays {
			r.close()
		}
	}
	qs, err := rewriteSettings(settings, &in.opts, func(sid quickfix.SessionID) (string, error) {
		r, err := newRelay(path, in.opts.Service, in.opts.TLSConfig, in.opts.DialTimeout, in.log.With("session", sid.String()))
		if err != nil {
			return "", err
		}
		in.relays[sid] = r
		in.sessions[sid] = &sessionState{changed: make(chan struct{})}
		return r.addr(), nil
	})
	if err != nil {
		closeRelays()
		return nil, err
	}
	qi, err := quickfix.NewInitiator(&guardApp{in: in}, lockedStoreFactory{storeFactory}, qs, logFactory)
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

// SessionIDs returns the Initiator's sessions.
func (in *Initiator) SessionIDs() []quickfix.SessionID {
	ids := make([]quickfix.SessionID, 0, len(in.sessions))
	for sid := range in.sessions {
		ids = append(ids, sid)
	}
	return ids
}

// LoggedOn reports whether a session is logged on, and on which endpoint.
func (in *Initiator) LoggedOn(sessionID quickfix.SessionID) (endpoint string, ok bool) {
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
		if stale != nil && stale() {
			return fmt.Errorf("fix: the path switched away from %q while waiting for the session's logon", endpoint)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fix: session %v not logged on to %q: %w", sessionID, endpoint, ctx.Err())
		}
	}
}

// Stats returns the Initiator's counters.
func (in *Initiator) Stats() *Stats { return &in.stats }

// Send sends a message that is not an order (a status request, a quote, a
// market-data request) at once, without the submission gate: it is never held.
// Orders are refused with ErrNotOrder: send them with SendOrder.
func (in *Initiator) Send(msg quickfix.Messagable, sessionID quickfix.SessionID) error {
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
	in.mu.Unlock()
	if dup {
		return fmt.Errorf("%w: %q", ErrDuplicateClOrdID, clOrdID)
	}
	in.stats.Orders.Add(1)
	t, err := in.path.Acquire(ctx, in.opts.Service, clOrdID)
	if err != nil {
		in.stats.NotSent.Add(1)
		return fmt.Errorf("fix: order %q: %w", clOrdID, err)
	}
	fail := func(cause error) error {
		in.stats.NotSent.Add(1)
		t.Done() // nothing left the process: withdraw the ticket
		return notSent(clOrdID, cause)
	}
	switched := func() bool { _, gen := in.path.Active(); return gen != t.Generation }
	if err := in.waitLoggedOn(ctx, sessionID, t.Endpoint, switched); err != nil {
		return fail(err)
	}
	symbol, _ := m.Body.GetString(tagSymbol)
	side, _ := m.Body.GetString(tagSide)
	o := &order{clOrdID: clOrdID, msgType: mt, sessionID: sessionID, symbol: symbol, side: side, ticket: t, submitting: true}
	in.mu.Lock()
	if _, dup := in.orders[clOrdID]; dup {
		in.mu.Unlock()
		return fail(fmt.Errorf("%w: %q", ErrDuplicateClOrdID, clOrdID))
	}
	in.orders[clOrdID] = o
	in.mu.Unlock()
	err = quickfix.SendToTarget(m, sessionID)
	in.mu.Lock()
	o.submitting = false
	early := o.early
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
		s.notify()
		s.mu.Unlock()
	}
	// Orders of this session still waiting for their answer may or may not have
	// reached the broker: hand them to reconciliation now, so they are settled
	// even when the session logs on again on the same endpoint (no switch). The
	// records stay: reconcile asks about them, and a late answer is recognised.
	in.mu.Lock()
	var lost []*order
	for _, o := range in.orders {
		if o.sessionID == sid && !o.submitting {
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
	if in.opts.Sequence == SequenceResetOnSwitch {
		if mt, _ := msg.Header.GetString(tagMsgType); mt == msgTypeLogon {
			if s := in.sessions[sid]; s != nil {
				active, _ := in.path.Active()
				s.mu.Lock()
				reset := s.lastEndpoint != "" && s.lastEndpoint != active.Name
				s.mu.Unlock()
				if reset {
					// quickfix resets the store and renumbers this logon to 1.
					msg.Body.SetField(tagResetSeqNumFlag, quickfix.FIXBoolean(true))
					in.stats.Resets.Add(1)
					in.log.Info("fix: logon resets sequence numbers (endpoint changed)", "session", sid.String(), "to", active.Name)
				}
			}
		}
	}
	in.user.ToAdmin(msg, sid)
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
		}
	}
	return in.user.ToApp(msg, sid)
}

func (in *Initiator) refuseResend(sid quickfix.SessionID, clOrdID, mt string) {
	in.stats.RefusedResends.Add(1)
	// The record stays: reconcile needs its symbol and side to ask about it.
	in.mu.Lock()
	o := in.orders[clOrdID]
	in.mu.Unlock()
	if o != nil && !o.submitting {
		o.ticket.Unknown(resendRefused(clOrdID, mt))
	}
	in.log.Warn("fix: resend of an order refused; gap-filled and handed to reconciliation", "session", sid.String(), "clordid", clOrdID, "msgtype", mt)
	if in.opts.OnRefusedResend != nil {
		in.opts.OnRefusedResend(sid, clOrdID, mt)
	}
}

func (a *guardApp) FromAdmin(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	return a.in.user.FromAdmin(msg, sid)
}

func (a *guardApp) FromApp(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	in := a.in
	mt, _ := msg.Header.GetString(tagMsgType)
	switch mt {
	case msgTypeExecutionReport:
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
		if ref, _ := msg.Body.GetString(tagBusinessRejectRefID); ref != "" {
			in.deliver(ref, msg)
			in.answered(ref, msg)
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
