package dst

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"
	"github.com/quickfixgo/tag"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// FIX seeds (Scenario.FIX). In a third of the seeds (drawn from a source
// of its own, so every other field of every seed is as before; only in
// standalone seeds whose broker does not check fencing tokens) trader 0
// sends its orders over FIX: a NewOrderSingle through transports/fix's
// Initiator on the same Path as the REST traders, so the session's
// connection is dialed through Path.Dial, held, fenced and switched like
// theirs. The broker's quickfix acceptor serves an in-memory listener of
// each region (simbroker.StartFIX) and books into the one account book, with
// the FIX door, the region and the connection in its audit record; the
// client's quickfix reaches the Initiator's relay over an in-memory pipe.
// Both need the simulation's build: -tags dstfix and the patched quickfix
// written by internal/dst/qfhook (given with -modfile); a build without
// them has no FIX seed at all.
//
// The client's record of a FIX order: sent when SendOrder returned nil; its
// first ExecutionReport (or BusinessMessageReject) makes it acknowledged or
// rejected, booked in the region of the endpoint its ticket was granted for
// (the attempt's endpoint, read from the ticket); an order still
// unanswered after the quiet period is an unknown outcome, and must have
// been settled by a reconcile (the REST reconciler's lookups in the shared
// book: the Initiator hands a session's unanswered orders to the Path when
// the session drops, and a switch hands over those in flight). Every
// invariant of the run judges these records and the broker's bookings as it
// judges REST ones; grants (no-ticket-while-held) come from the ticket.
// Network faults of a region act on its FIX address too; unknown-outcome
// faults also cut the next N FIX orders after booking (the broker closes
// the session's connection before answering).

// fixSent is the outcome of a FIX order that left and is not yet answered.
const fixSent = "sent"

// fixTrader is the trader whose orders go over FIX in a FIX seed.
const fixTrader = 0

// drawFIX decides Scenario.FIX from a source of its own.
func drawFIX(s *Scenario) {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x4649584649584649))
	s.FIX = r.IntN(3) == 0 && fixSupported && !s.Coordinated && s.Tokens == simbroker.TokensOff
}

// fixSim is a FIX seed's client: the Initiator and what it was granted.
type fixSim struct {
	w      *world
	in     *fix.Initiator
	sid    quickfix.SessionID
	unseed func()

	mu      sync.Mutex
	tickets map[string]fixGrant // by ClOrdID
	logons  int
	// MoveFIXHanded and no-order-sent-after-handed (fixhanded.go): the
	// armed move; when each order's latest call began, when a reconcile
	// was first handed it in flight since, and its writes after that.
	move       *fixHanded
	started    map[string]time.Time
	handed     map[string]time.Time
	lateWrites map[string]handedRec
}

type fixGrant struct {
	region string
	token  uint64
}

// fixBrokerConfig gives the broker of a FIX seed CompIDs of the seed's own:
// quickfix keeps one process-wide registry of session IDs, and seeds run
// side by side.
func (w *world) fixBrokerConfig(bc *simbroker.Config) {
	if !w.s.FIX {
		return
	}
	bc.BrokerCompID = "SIMB" + strconv.FormatUint(w.s.Seed, 10)
	bc.ClientCompID = "SIMC" + strconv.FormatUint(w.s.Seed, 10)
}

// buildFIX starts the broker's acceptor and names each region's FIX address
// in its endpoint.
func (w *world) buildFIX(pc *pathdialer.Config) error {
	if !w.s.FIX {
		return nil
	}
	if err := startBrokerFIX(w.b); err != nil {
		return fmt.Errorf("dst: broker FIX: %w", err)
	}
	for i := range pc.Endpoints {
		pc.Endpoints[i].Services[pathdialer.ServiceFIX] = addr(pc.Endpoints[i].Region, simbroker.FIX)
	}
	w.fx = &fixSim{w: w, tickets: map[string]fixGrant{}, started: map[string]time.Time{}, handed: map[string]time.Time{}, lateWrites: map[string]handedRec{}}
	return nil
}

// startClient starts the Initiator on the Path (one session, numbers kept
// across regions as the broker's one acceptor keeps them).
func (f *fixSim) startClient() error {
	if f == nil {
		return nil
	}
	bc := f.w.b.Config()
	f.sid = quickfix.SessionID{BeginString: quickfix.BeginStringFIX44, SenderCompID: bc.ClientCompID, TargetCompID: bc.BrokerCompID}
	settings := quickfix.NewSettings()
	ss := quickfix.NewSessionSettings()
	ss.Set(config.BeginString, quickfix.BeginStringFIX44)
	ss.Set(config.SenderCompID, bc.ClientCompID)
	ss.Set(config.TargetCompID, bc.BrokerCompID)
	// One second: the broker lets go of a session whose connection went
	// silent (a blackhole) after about 2.4 heartbeats, and refuses a logon
	// through another region until then.
	ss.Set(config.HeartBtInt, "1")
	if _, err := settings.AddSession(ss); err != nil {
		return fmt.Errorf("dst: FIX settings: %w", err)
	}
	in, err := fix.NewInitiator(fixSimApp{f}, quickfix.NewMemoryStoreFactory(), settings, quickfix.NewNullLogFactory(),
		f.w.path, fix.Options{Sequence: fix.SequenceContinue})
	if err != nil {
		return fmt.Errorf("dst: FIX initiator: %w", err)
	}
	f.unseed = simHooks(in, f.acquired, f.w.s.Seed)
	f.in = in
	return nil
}

// acquired records an order's ticket as the Path grants it: the attempt's
// endpoint, its token, and the grant for no-ticket-while-held.
func (f *fixSim) acquired(t *pathdialer.Ticket) {
	region := t.Endpoint
	if ep, ok := f.w.path.Endpoint(t.Endpoint); ok {
		region = ep.Region
	}
	now := time.Now()
	f.mu.Lock()
	f.tickets[t.OrderID] = fixGrant{region: region, token: t.Token}
	f.mu.Unlock()
	f.w.mu.Lock()
	f.w.cx.grants = append(f.w.cx.grants, grantRec{id: t.OrderID, endpoint: t.Endpoint, at: now, acq: now})
	f.w.mu.Unlock()
}

func (f *fixSim) grant(id string) (fixGrant, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.tickets[id]
	return g, ok
}

// placeBy places trader i's order: over FIX for the FIX trader of a FIX
// seed, else over REST.
func (w *world) placeBy(i int, id string, limit bool) {
	if w.fx != nil && i == fixTrader {
		w.fx.place(id, limit)
		return
	}
	w.place(id, limit)
}

// place sends one NewOrderSingle through SendOrder; its answer is recorded
// when it comes (answer).
func (f *fixSim) place(id string, limit bool) { f.placeWithin(id, limit, f.w.s.OrderTimeout) }

// placeWithin is place with the order's own timeout.
func (f *fixSim) placeWithin(id string, limit bool, timeout time.Duration) {
	w := f.w
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	msg := quickfix.NewMessage()
	msg.Header.SetString(tag.MsgType, "D")
	msg.Body.SetString(tag.ClOrdID, id)
	msg.Body.SetString(tag.Symbol, "EURUSD")
	msg.Body.SetString(tag.Side, "1")
	msg.Body.SetString(tag.OrderQty, "1")
	msg.Body.SetString(tag.HandlInst, "1")
	if limit {
		msg.Body.SetString(tag.OrdType, "2")
		msg.Body.SetString(tag.Price, "0.5")
	} else {
		msg.Body.SetString(tag.OrdType, "1")
	}
	msg.Body.SetField(tag.TransactTime, quickfix.FIXUTCTimestamp{Time: time.Now()})
	w.mu.Lock()
	rec := w.orders[id]
	if rec == nil {
		rec = &orderRec{id: id, limit: limit, first: time.Now()}
		w.orders[id] = rec
	}
	rec.start = time.Now()
	w.mu.Unlock()
	f.mu.Lock()
	f.started[id] = rec.start
	f.mu.Unlock()
	err := f.in.SendOrder(ctx, msg, f.sid)
	now := time.Now()
	w.mu.Lock()
	rec.notSent = ""
	if errors.Is(err, fix.ErrNotSent) || errors.Is(err, pathdialer.ErrTradingHalted) || errors.Is(err, pathdialer.ErrTicketExpired) {
		rec.notSent = err.Error() // notsent_check.go judges it against the book
	}
	switch {
	case err == nil:
		if rec.outcome == "" { // not answered yet
			rec.outcome = fixSent
		}
		w.mu.Unlock()
		return
	case errors.Is(err, pathdialer.ErrTradingHalted):
		rec.outcome = "halted"
	case errors.Is(err, pathdialer.ErrTicketExpired):
		rec.outcome = "expired"
	default:
		rec.outcome = "not-sent"
	}
	rec.end = now
	w.mu.Unlock()
	w.tracef(now, "order %s %s fix (sent at +%v)", id, rec.outcome, rec.start.Sub(w.start))
}

// answer records the first answer to order id: acknowledged (booked in the
// region of its ticket's endpoint) or rejected.
func (f *fixSim) answer(id string, rejected bool, text string) {
	w := f.w
	g, granted := f.grant(id)
	now := time.Now()
	w.mu.Lock()
	rec := w.orders[id]
	if rec == nil || (rec.outcome != "" && rec.outcome != fixSent) {
		w.mu.Unlock()
		return
	}
	rec.end = now
	if rejected {
		rec.outcome, rec.errCode = "rejected", text
	} else {
		rec.outcome = "acked"
	}
	if granted {
		rec.region, rec.ticketGn = g.region, g.token
	}
	line := fmt.Sprintf("order %s %s fix %s (sent at +%v)", id, rec.outcome, rec.region, rec.start.Sub(w.start))
	w.mu.Unlock()
	w.tracef(now, "%s", line)
}

// finish, after the quiet period, makes every FIX order still unanswered an
// unknown outcome of its ticket's generation.
func (f *fixSim) finish() {
	if f == nil {
		return
	}
	w := f.w
	now := time.Now()
	var lines []string
	w.mu.Lock()
	for id, rec := range w.orders {
		if rec.outcome != fixSent {
			continue
		}
		g, _ := f.grant(id)
		rec.outcome, rec.ticketGn, rec.end, rec.runEnded = "unknown", g.token, now, true
		lines = append(lines, fmt.Sprintf("order %s unknown fix on %s gen=%d (sent at +%v)", id, g.region, g.token, rec.start.Sub(w.start)))
	}
	w.mu.Unlock()
	sort.Strings(lines)
	for _, l := range lines {
		w.tracef(now, "%s", l)
	}
}

// apply acts a fault of f's region on its FIX address too (a partition is
// the probe's alone); an unknown-outcome fault also cuts the next N FIX
// orders after booking.
func (f *fixSim) apply(sf ScheduledFault, nf faultnet.Fault) {
	if f == nil {
		return
	}
	switch sf.Kind {
	case FaultUnknown:
		_ = f.w.b.SetFault(sf.Region, simbroker.FIX, simbroker.UnknownOutcome{N: sf.N})
	case FaultPartition:
	default:
		_ = f.w.net.SetFault(addr(sf.Region, simbroker.FIX), nf)
	}
}

func (f *fixSim) heal(region string) {
	if f == nil {
		return
	}
	_ = f.w.net.SetFault(addr(region, simbroker.FIX), faultnet.None())
}

// close logs the session out and stops the Initiator.
func (f *fixSim) close() {
	if f == nil || f.in == nil {
		return
	}
	_ = f.in.Close()
	f.unseed()
}

// fixBuildFlags adds, in the FIX seeds' build, what a replay command needs
// to build it (the tag, and the patched quickfix's go.mod) to tags ("" or
// " -tags dstyield").
func fixBuildFlags(tags string) string {
	if !fixSupported {
		return tags
	}
	if tags == "" {
		tags = " -tags dstfix"
	} else {
		tags += ",dstfix"
	}
	return tags + ` -modfile="$(go run ./internal/dst/qfhook -out=/tmp/qf)"`
}

// fixSimApp is the Initiator's application: it hands each order's first
// answer to the record.
type fixSimApp struct{ f *fixSim }

func (a fixSimApp) OnCreate(quickfix.SessionID) {}

func (a fixSimApp) OnLogon(quickfix.SessionID) {
	a.f.mu.Lock()
	a.f.logons++
	a.f.mu.Unlock()
}

func (a fixSimApp) OnLogout(quickfix.SessionID)                   {}
func (a fixSimApp) ToAdmin(*quickfix.Message, quickfix.SessionID) {}
func (a fixSimApp) ToApp(msg *quickfix.Message, _ quickfix.SessionID) error {
	if mt, _ := msg.MsgType(); mt == "D" {
		id, _ := msg.Body.GetString(tag.ClOrdID)
		a.f.wrote(id) // fixhanded.go
	}
	return nil
}

func (a fixSimApp) FromAdmin(*quickfix.Message, quickfix.SessionID) quickfix.MessageRejectError {
	return nil
}

func (a fixSimApp) FromApp(msg *quickfix.Message, _ quickfix.SessionID) quickfix.MessageRejectError {
	mt, _ := msg.MsgType()
	switch mt {
	case "8":
		id, _ := msg.Body.GetString(tag.ClOrdID)
		execType, _ := msg.Body.GetString(tag.ExecType)
		ordStatus, _ := msg.Body.GetString(tag.OrdStatus)
		text, _ := msg.Body.GetString(tag.Text)
		if id != "" {
			a.f.answer(id, execType == "8" || ordStatus == "8", text)
		}
	case "j":
		id, _ := msg.Body.GetString(tag.BusinessRejectRefID)
		text, _ := msg.Body.GetString(tag.Text)
		if id != "" {
			a.f.answer(id, true, text)
		}
	}
	return nil
}

// invFIXGranted: every booking through the broker's FIX door is of an order
// whose ticket the Path granted, in the region of that ticket's endpoint
// (the attempt's endpoint, read from the ticket; judged from the broker's
// record of the booking, not from the client's).
const invFIXGranted = "fix-booked-where-granted"

// check counts the bookings through the FIX door and judges each against
// its order's grant.
func (f *fixSim) check(res *Result, audit simbroker.AuditLog, viol func(inv, format string, a ...any)) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range audit.Booked() {
		if r.Service != string(simbroker.FIX) {
			continue
		}
		res.Stats.FIXBooked++
		g, ok := f.tickets[r.ClientOrderID]
		switch {
		case !ok:
			viol(invFIXGranted, "%s booked through FIX via %s at %v, but no ticket was granted for it", r.ClientOrderID, r.Region, r.Time.Sub(f.w.start))
		case g.region != r.Region:
			viol(invFIXGranted, "%s granted for %s (gen %d), booked through FIX via %s at %v", r.ClientOrderID, g.region, g.token, r.Region, r.Time.Sub(f.w.start))
		}
	}
	f.checkHanded(audit, viol) // fixhanded.go
}
