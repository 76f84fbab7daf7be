package simbroker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"
	"github.com/shopspring/decimal"
)

var (
	errFIXNotRelayed   = errors.New("FIX connection did not come through a region relay")
	errFIXClosing      = errors.New("broker is closing")
	errFIXSessionBusy  = errors.New("FIX session already logged on (concurrent policy: log out of the other region first)")
	errFIXFenceTimeout = errors.New("old FIX session did not drop within FenceTimeout")
	errFIXLockedOut    = errors.New("FIX logon refused: identity locked out")
)

// fixServer is the broker's one quickfix acceptor (one session ID for the
// account), reached only through the regions' FIX relays.
//
// Region attribution: each relay dials the acceptor from its own ephemeral
// local port and records that address before forwarding the first byte.
// quickfix hands the accepted net.Conn to the ConnectionValidator (Validate,
// below) after reading the Logon; its RemoteAddr is the relay's upstream
// local address, which LookupUpstream maps to (region, relay conn ID). The
// session has one connection at a time, so the connection validated last
// becomes the session's current connection at OnLogon, and every
// application message until OnLogout is attributed to it.
type fixServer struct {
	b        *Broker
	acceptor *quickfix.Acceptor
	addr     string
	sid      quickfix.SessionID // acceptor's view: Sender = broker
	router   *quickfix.MessageRouter
	execID   atomic.Uint64

	mu      sync.Mutex
	closing bool
	pending *fixConn
	cur     *fixConn
}

// fixConn is one relayed FIX connection that logged on (or is logging on).
type fixConn struct {
	rg        *Region
	relayID   uint64
	id        string
	loggedOut chan struct{}
	// conn, for a connection accepted on an injected listener (no relay),
	// is the broker's end, closed to drop the session.
	conn net.Conn
	// clean: the client sent Logout, or the broker dropped the session for
	// a newer logon; otherwise its end is a drop (Config.Venue's lockout).
	clean atomic.Bool
}

// FIXSessionID returns the account's FIX session ID as the client
// (initiator) sees it: BeginString FIX.4.4, SenderCompID = ClientCompID,
// TargetCompID = BrokerCompID.
func (b *Broker) FIXSessionID() quickfix.SessionID {
	return quickfix.SessionID{BeginString: quickfix.BeginStringFIX44, SenderCompID: b.cfg.ClientCompID, TargetCompID: b.cfg.BrokerCompID}
}

// newFIXServer is the acceptor's application, its routes set, not started.
func newFIXServer(b *Broker) *fixServer {
	fs := &fixServer{
		b:      b,
		sid:    quickfix.SessionID{BeginString: quickfix.BeginStringFIX44, SenderCompID: b.cfg.BrokerCompID, TargetCompID: b.cfg.ClientCompID},
		router: quickfix.NewMessageRouter(),
	}
	fs.router.AddRoute(quickfix.BeginStringFIX44, msgTypeNewOrderSingle, fs.onNewOrderSingle)
	fs.router.AddRoute(quickfix.BeginStringFIX44, msgTypeOrderStatusRequest, fs.onOrderStatus)
	fs.router.AddRoute(quickfix.BeginStringFIX44, msgTypeOrderMassStatus, fs.onMassStatus)
	fs.router.AddRoute(quickfix.BeginStringFIX44, msgTypeOrderCancelRequest, fs.onCancel)
	return fs
}

func startFIX(b *Broker) (*fixServer, error) {
	fs := newFIXServer(b)

	if _, err := quickfix.GetExpectedSenderNum(fs.sid); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrFIXSessionInUse, fs.sid)
	}
	var logs quickfix.LogFactory = quickfix.NewNullLogFactory()
	if b.cfg.FIXVerbose {
		logs = slogLogFactory{log: b.log}
	}
	// quickfix listens by itself on a configured port (it cannot take a
	// listener), so pick a free loopback port and retry if it is taken in
	// between.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("simbroker: FIX port: %w", err)
		}
		settings := quickfix.NewSettings()
		settings.GlobalSettings().Set(config.SocketAcceptHost, "127.0.0.1")
		ss := quickfix.NewSessionSettings()
		ss.Set(config.BeginString, quickfix.BeginStringFIX44)
		ss.Set(config.SenderCompID, b.cfg.BrokerCompID)
		ss.Set(config.TargetCompID, b.cfg.ClientCompID)
		ss.Set(config.SocketAcceptPort, strconv.Itoa(port))
		ss.Set(config.ResetOnLogon, yn(b.cfg.ResetOnLogon))
		if _, err := settings.AddSession(ss); err != nil {
			return nil, fmt.Errorf("simbroker: FIX settings: %w", err)
		}
		a, err := quickfix.NewAcceptor(fs, quickfix.NewMemoryStoreFactory(), settings, logs)
		if err != nil {
			_ = quickfix.UnregisterSession(fs.sid)
			if strings.Contains(err.Error(), "Duplicate SessionID") {
				return nil, fmt.Errorf("%w: %s", ErrFIXSessionInUse, fs.sid)
			}
			return nil, fmt.Errorf("simbroker: FIX acceptor: %w", err)
		}
		a.SetConnectionValidator(fs)
		if err := a.Start(); err != nil {
			_ = quickfix.UnregisterSession(fs.sid)
			lastErr = err
			continue
		}
		fs.acceptor = a
		fs.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		return fs, nil
	}
	return nil, fmt.Errorf("simbroker: FIX acceptor start: %w", lastErr)
}

func yn(v bool) string {
	if v {
		return "Y"
	}
	return "N"
}

func freePort() (int, error) {
	ln, err := listenLoopback()
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (fs *fixServer) beginClose() {
	fs.mu.Lock()
	fs.closing = true
	fs.mu.Unlock()
}

// stop waits (bounded) for the session to see its connection drop — the
// relays are closed first — and then stops the acceptor. Stopping a
// logged-on quickfix session would start a logout timer that outlives the
// session's goroutine.
func (fs *fixServer) stop() error {
	fs.mu.Lock()
	cur := fs.cur
	fs.mu.Unlock()
	var err error
	if cur != nil {
		select {
		case <-cur.loggedOut:
		case <-time.After(5 * time.Second):
			err = errors.New("simbroker: FIX session still logged on at Close")
		}
	}
	fs.acceptor.Stop()
	return err
}

func (fs *fixServer) current() *fixConn {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.cur
}

// lookup maps the acceptor-side remote address of a connection to its region relay.
func (fs *fixServer) lookup(remote string) (*Region, uint64, bool) {
	for _, rg := range fs.b.regions {
		if r := rg.relays[FIX]; r != nil {
			if info, ok := r.LookupUpstream(remote); ok {
				return rg, info.ID, true
			}
		}
	}
	return nil, 0, false
}

func (fs *fixServer) refuse(rg *Region, id string, err error) error {
	region := ""
	if rg != nil {
		region = rg.name
	}
	fs.b.audit.add(Record{Kind: KindRefused, Region: region, Service: string(FIX), ConnID: id, Outcome: OutcomeFailed, Detail: err.Error()})
	return err
}

// Validate implements quickfix.ConnectionValidator: it attributes the
// connection to a region and applies the session policy.
func (fs *fixServer) Validate(conn net.Conn, _ quickfix.SessionID) error {
	if fs.b.isClosed() || !fs.b.ready.Load() {
		return errFIXClosing
	}
	var own net.Conn
	rg, relayID, ok := fs.lookup(conn.RemoteAddr().String())
	if ac, isAttr := conn.(attributedConn); isAttr {
		rg, relayID = ac.fixAttribution()
		ok, own = rg != nil, conn
	}
	if !ok {
		return fs.refuse(nil, "direct:"+conn.RemoteAddr().String(), errFIXNotRelayed)
	}
	nc := &fixConn{rg: rg, relayID: relayID, id: connID(rg.name, FIX, relayID), loggedOut: make(chan struct{}), conn: own}
	if locked, until := fs.b.venue.lockedOut(time.Now()); locked {
		return fs.refuse(rg, nc.id, fmt.Errorf("%w until %s (a session dropped without a logout)", errFIXLockedOut, until.Format(time.RFC3339Nano)))
	}
	fs.mu.Lock()
	if fs.closing {
		fs.mu.Unlock()
		return errFIXClosing
	}
	if fs.b.cfg.SessionPolicy == SessionOnePerCredential {
		// The credential moves to rg: with FenceEnforced the region of the
		// previous logon is fenced before its session is reset.
		fs.b.fenceForLogon(rg, nc.id)
	}
	if old := fs.cur; old != nil {
		if fs.b.cfg.SessionPolicy != SessionOnePerCredential {
			fs.mu.Unlock()
			return fs.refuse(rg, nc.id, fmt.Errorf("%w (held through %s)", errFIXSessionBusy, old.id))
		}
		fs.mu.Unlock()
		fs.b.audit.add(Record{Kind: KindFence, Region: old.rg.name, Service: string(FIX), ConnID: old.id,
			Outcome: OutcomeOK, Detail: "dropped for logon through " + nc.id})
		old.clean.Store(true)
		old.reset()
		select {
		case <-old.loggedOut:
		case <-time.After(fs.b.cfg.FenceTimeout):
			return fs.refuse(rg, nc.id, errFIXFenceTimeout)
		}
		fs.mu.Lock()
		if fs.closing {
			fs.mu.Unlock()
			return errFIXClosing
		}
	}
	fs.pending = nc
	fs.mu.Unlock()
	return nil
}

// OnCreate implements quickfix.Application.
func (fs *fixServer) OnCreate(quickfix.SessionID) {}

// OnLogon implements quickfix.Application.
func (fs *fixServer) OnLogon(quickfix.SessionID) {
	fs.mu.Lock()
	c := fs.pending
	fs.pending = nil
	if c == nil {
		c = &fixConn{id: "unknown", loggedOut: make(chan struct{})}
	}
	fs.cur = c
	fs.mu.Unlock()
	region := ""
	if c.rg != nil {
		region = c.rg.name
	}
	fs.b.audit.add(Record{Kind: KindLogon, Region: region, Service: string(FIX), ConnID: c.id, Outcome: OutcomeOK})
}

// OnLogout implements quickfix.Application; it runs on logout and on disconnect.
func (fs *fixServer) OnLogout(quickfix.SessionID) {
	fs.mu.Lock()
	c := fs.cur
	fs.cur = nil
	fs.mu.Unlock()
	if c == nil {
		return
	}
	close(c.loggedOut)
	if !c.clean.Load() {
		fs.b.venue.sessionDropped(time.Now())
	}
	region := ""
	if c.rg != nil {
		region = c.rg.name
	}
	fs.b.audit.add(Record{Kind: KindLogout, Region: region, Service: string(FIX), ConnID: c.id, Outcome: OutcomeOK})
	fs.b.connEnded(c.rg, FIX, c.id)
}

// ToAdmin implements quickfix.Application.
func (fs *fixServer) ToAdmin(*quickfix.Message, quickfix.SessionID) {}

// ToApp implements quickfix.Application.
func (fs *fixServer) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }

// FromAdmin implements quickfix.Application.
func (fs *fixServer) FromAdmin(msg *quickfix.Message, _ quickfix.SessionID) quickfix.MessageRejectError {
	fs.fixAdmin(msg)
	if msg.IsMsgTypeOf(msgTypeLogout) {
		if c := fs.current(); c != nil {
			c.clean.Store(true)
		}
	}
	return nil
}

// FromApp implements quickfix.Application.
func (fs *fixServer) FromApp(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	return fs.router.Route(msg, sid)
}

func (fs *fixServer) send(m quickfix.Messagable, sid quickfix.SessionID) {
	if err := quickfix.SendToTarget(m, sid); err != nil {
		fs.b.log.Warn("FIX send failed", "err", err)
	}
}

func sideToBook(s string) string {
	switch s {
	case sideBuy:
		return "buy"
	case sideSell:
		return "sell"
	}
	return "side:" + s
}

func sideToFIX(s string) string {
	if s == "sell" {
		return sideSell
	}
	return sideBuy
}

func ordTypeToBook(t string) string {
	switch t {
	case ordTypeMarket:
		return "market"
	case ordTypeLimit:
		return "limit"
	}
	return "ordtype:" + t
}

func ordStatusToFIX(s string) string {
	switch s {
	case StatusFilled:
		return ordStatusFilled
	case StatusCanceled:
		return ordStatusCanceled
	}
	return ordStatusNew
}

// dec parses a booked decimal string and returns it with its scale.
func dec(s string) (decimal.Decimal, int32) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Zero, 0
	}
	if e := d.Exponent(); e < 0 {
		return d, -e
	}
	return d, 0
}

func (fs *fixServer) nextExecID() string { return "E-" + strconv.FormatUint(fs.execID.Add(1), 10) }

// report builds an ExecutionReport describing o.
func (fs *fixServer) report(o Order, execType string) execReport {
	qty, qs := dec(o.Qty)
	cum, cs := dec(o.FilledQty)
	leaves := decimal.Zero
	if o.Open() {
		leaves = qty.Sub(cum)
	}
	avg, as := dec(o.AvgPrice)
	er := newExecReport(o.OrderID, fs.nextExecID(), execType, ordStatusToFIX(o.Status), sideToFIX(o.Side),
		fixDecimal(leaves, max(qs, cs)), fixDecimal(cum, cs), fixDecimal(avg, as))
	er.setString(tagClOrdID, o.ClientOrderID)
	er.setString(tagSymbol, o.Symbol)
	er.setDecimal(tagOrderQty, qty, qs)
	er.setString(tagAccount, fs.b.cfg.AccountID)
	er.setTime(tagTransactTime, o.UpdatedAt)
	if o.Type == "limit" {
		er.setString(tagOrdType, ordTypeLimit)
		p, ps := dec(o.Price)
		er.setDecimal(tagPrice, p, ps)
	} else {
		er.setString(tagOrdType, ordTypeMarket)
	}
	return er
}

// rejectReport builds an ExecutionReport with OrdStatus=REJECTED for an
// order that was not booked or does not exist.
func (fs *fixServer) rejectReport(clOrdID, side, execType, reason, text string) execReport {
	if side == "" {
		side = sideBuy
	}
	zero := fixDecimal(decimal.Zero, 0)
	er := newExecReport("NONE", fs.nextExecID(), execType, ordStatusRejected, side, zero, zero, zero)
	if clOrdID != "" {
		er.setString(tagClOrdID, clOrdID)
	}
	er.setString(tagOrdRejReason, reason)
	er.setString(tagText, text)
	er.setTime(tagTransactTime, time.Now())
	return er
}

// attributedConn is a connection accepted on a region's injected listener
// (a simulation's FIX acceptor, fix_injected_dstfix.go): it names its region
// and its number there itself.
type attributedConn interface {
	fixAttribution() (*Region, uint64)
}

// reset drops fc's connection: through its region's relay (a reset), or,
// accepted on an injected listener, by closing the broker's end.
func (fc *fixConn) reset() {
	if fc.conn != nil {
		_ = fc.conn.Close()
		return
	}
	fc.rg.relays[FIX].ResetConn(fc.relayID)
}

// source returns the connection's ID and the relay's facts about it.
func (fc *fixConn) source() source {
	if r := fc.rg.relays[FIX]; r != nil {
		if info, ok := r.Info(fc.relayID); ok {
			return infoSource(fc.id, info)
		}
	}
	return source{connID: fc.id}
}

func (fs *fixServer) onNewOrderSingle(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	fc := fs.current()
	if fc == nil || fc.rg == nil {
		return quickfix.NewBusinessMessageRejectError("no region attributed to this session", 0, nil)
	}
	clOrdID, rerr := msg.Body.GetString(tagClOrdID)
	if rerr != nil {
		return rerr
	}
	possDup, _ := msg.Header.GetBool(tagPossDupFlag)
	side, _ := msg.Body.GetString(tagSide)
	ordType, _ := msg.Body.GetString(tagOrdType)
	symbol, _ := msg.Body.GetString(tagSymbol)
	req := orderRequest{ClientOrderID: clOrdID, Symbol: symbol, Side: sideToBook(side), Type: ordTypeToBook(ordType)}
	if q, err := decimalField(msg, tagOrderQty); err == nil {
		req.Qty = q.String()
	}
	if msg.Body.Has(tagPrice) {
		if p, err := decimalField(msg, tagPrice); err == nil {
			req.Price = p.String()
		}
	}
	tokStr, _ := msg.Body.GetString(TokenTag)
	tok := parseToken(tokStr)
	if fc.rg.app.isPartial(FIX) {
		fs.b.audit.add(Record{Kind: KindOrder, Region: fc.rg.name, Service: string(FIX), ConnID: fc.id,
			ClientOrderID: clOrdID, Token: tok.value, Outcome: OutcomeUnavailable, PossDup: possDup, Detail: "partial: order path broken"})
		fs.send(fs.rejectReport(clOrdID, side, execTypeRejected, rejOther, "order entry unavailable"), sid)
		return nil
	}
	o, out, cut, err := fs.b.placeOrder(fc.rg, FIX, fc.source(), req, possDup, tok)
	switch {
	case err != nil:
		fs.send(fs.rejectReport(clOrdID, side, execTypeRejected, rejOther, string(out)+": "+err.Error()), sid)
	case cut:
		// Booked; cut the connection before any answer.
		fc.reset()
	case out == OutcomeDuplicate:
		fs.send(fs.report(o, execTypeOrderStatus), sid)
	default:
		if o.Status == StatusFilled {
			pending := o
			pending.Status, pending.FilledQty, pending.AvgPrice = StatusNew, "0", ""
			fs.send(fs.report(pending, execTypeNew), sid)
			fill := fs.report(o, execTypeTrade)
			px, ps := dec(o.AvgPrice)
			q, qs := dec(o.FilledQty)
			fill.setDecimal(tagLastPx, px, ps)
			fill.setDecimal(tagLastQty, q, qs)
			fs.send(fill, sid)
		} else {
			fs.send(fs.report(o, execTypeNew), sid)
		}
	}
	return nil
}

func (fs *fixServer) onOrderStatus(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	clOrdID, rerr := msg.Body.GetString(tagClOrdID)
	if rerr != nil {
		return rerr
	}
	side, _ := msg.Body.GetString(tagSide)
	var er execReport
	var o Order
	var ok bool
	if fc := fs.current(); fc != nil && fc.rg != nil {
		if fs.throttleFIX(fc, clOrdID) {
			return nil
		}
		o, ok = fs.b.lookupOrder(fc.rg, FIX, fc.source(), clOrdID)
	} else {
		o, ok = fs.b.book.get(clOrdID)
	}
	if ok {
		er = fs.report(o, execTypeOrderStatus)
	} else {
		er = fs.rejectReport(clOrdID, side, execTypeOrderStatus, rejUnknownOrder, "unknown ClOrdID")
	}
	if id, err := msg.Body.GetString(tagOrdStatusReqID); err == nil {
		er.setString(tagOrdStatusReqID, id)
	}
	fs.send(er, sid)
	return nil
}

func (fs *fixServer) onMassStatus(msg *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	reqID, rerr := msg.Body.GetString(tagMassStatusReqID)
	if rerr != nil {
		return rerr
	}
	orders := fs.b.visibleList(false, time.Now())
	if fc := fs.current(); fc != nil && fc.rg != nil {
		if fs.throttleFIX(fc, "") {
			return nil
		}
		src := fc.source()
		fs.b.audit.add(Record{Kind: KindLookup, Region: fc.rg.name, Service: string(FIX), ConnID: src.connID,
			Outcome: OutcomeOK, Detail: "mass status", ConnOpened: src.opened, SentBy: src.sentBy, SentAfter: src.sentAfter})
	}
	if sym, err := msg.Body.GetString(tagSymbol); err == nil && sym != "" {
		kept := orders[:0]
		for _, o := range orders {
			if o.Symbol == sym {
				kept = append(kept, o)
			}
		}
		orders = kept
	}
	if len(orders) == 0 {
		er := fs.rejectReport("", sideBuy, execTypeOrderStatus, rejUnknownOrder, "no orders")
		er.setString(tagMassStatusReqID, reqID)
		er.Body.SetInt(tagTotNumReports, 0)
		er.Body.SetBool(tagLastRptRequested, true)
		fs.send(er, sid)
		return nil
	}
	for i, o := range orders {
		er := fs.report(o, execTypeOrderStatus)
		er.setString(tagMassStatusReqID, reqID)
		er.Body.SetInt(tagTotNumReports, len(orders))
		er.Body.SetBool(tagLastRptRequested, i == len(orders)-1)
		fs.send(er, sid)
	}
	return nil
}

// slogLogFactory sends quickfix's logs to a slog.Logger at debug level.
type slogLogFactory struct{ log *slog.Logger }

func (f slogLogFactory) Create() (quickfix.Log, error) {
	return slogLog{f.log.With("fix", "global")}, nil
}

func (f slogLogFactory) CreateSessionLog(id quickfix.SessionID) (quickfix.Log, error) {
	return slogLog{f.log.With("fix", id.String())}, nil
}

type slogLog struct{ log *slog.Logger }

func (l slogLog) OnIncoming(b []byte) {
	l.log.Debug("fix in", "msg", strings.ReplaceAll(string(b), "\x01", "|"))
}

func (l slogLog) OnOutgoing(b []byte) {
	l.log.Debug("fix out", "msg", strings.ReplaceAll(string(b), "\x01", "|"))
}

func (l slogLog) OnEvent(s string) { l.log.Debug("fix event", "event", s) }

func (l slogLog) OnEventf(format string, a ...any) {
	l.log.Debug("fix event", "event", fmt.Sprintf(format, a...))
}
