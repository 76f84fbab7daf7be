package fix_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfixgo/enum"
	"github.com/quickfixgo/field"
	"github.com/quickfixgo/fix44/newordersingle"
	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/log/screen"
	"github.com/shopspring/decimal"
	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/venue"
)

// TestMain checks for leaked goroutines. Four are ignored, by name: quickfix
// v0.9.10 arms time.AfterFunc callbacks for the logon timeout
// ((*stateMachine).Connect.func1) and the logout timeout
// ((*session).initiateLogoutInReplyTo.func1) that send on the session's
// unbuffered event channel; when the session has stopped before they fire,
// nobody receives and they block forever. They belong to quickfix (one per
// logon or logout still pending at Stop), not to this package, and nothing
// outside quickfix can release them. The third, quickfix.readLoop, is the same
// defect on the read side: when quickfix refuses a Logon answer (for example
// "MsgSeqNum too low") it stops draining the connection's unbuffered message
// channel, and a second message the counterparty had already sent (its
// ResendRequest) blocks the read loop forever. The fourth,
// (*Initiator).waitForInSessionTime.func1, is quickfix's goroutine that asks
// the session loop whether it is in session time: when Stop ends the session
// loop first, its send on the session's unbuffered admin channel is never
// received (initiator.go:121, session.go:111; one per session stopped while
// reconnecting, as the switch's held reconnects make likelier).
func TestMain(m *testing.M) {
	if os.Getenv(compatEnv) != "" { // this process is a compatibility-suite acceptor
		runCompatAcceptor()
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.(*stateMachine).Connect.func1"),
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.(*session).initiateLogoutInReplyTo.func1"),
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.readLoop"),
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.(*session).waitForInSessionTime"),
	)
}

var testSeq atomic.Int64

// uniq returns a name unique in the process: quickfix's session registry is
// global, so every test uses its own comp IDs.
func uniq(prefix string) string { return fmt.Sprintf("%s%d", prefix, testSeq.Add(1)) }

// received is one application message the broker received.
type received struct {
	ClOrdID string
	MsgType string
	Region  string
	PossDup bool
	Token   string // tag 9901, when present
}

// broker is a real quickfix acceptor (one shared book and session state) behind
// one faultnet relay per region: a broker that shares its session across regions.
type broker struct {
	t        testing.TB
	acceptor *quickfix.Acceptor
	relays   map[string]*faultnet.Relay // region → relay
	probes   map[string]quickfix.SessionID

	mu         sync.Mutex
	book       map[string]string // ClOrdID → OrdStatus
	statusReqs map[string]int    // ClOrdID → OrderStatusRequests received
	audit      []received
	logons     []received // MsgType "A", PossDup = ResetSeqNumFlag
	logouts    []string   // "region 9003=value" of every Logout received
	connOf     map[quickfix.SessionID]net.Conn
	regionOf   map[quickfix.SessionID]string
	loggedOn   map[quickfix.SessionID]bool
	changed    chan struct{}
	onOrder    func(b *broker, sym string) // called under no lock before answering
	resendReq  atomic.Int64
	// statusSilent: status requests are counted, never answered.
	statusSilent atomic.Bool
	// rejectLogon, when it holds a non-empty string, refuses every logon
	// with a Logout carrying that text.
	rejectLogon atomic.Value
}

// newBroker starts an acceptor for the given initiator-side sessions (their
// SenderCompIDs, with the BeginString) and one probe session per region.
func newBroker(t testing.TB, clients map[string]string) *broker {
	t.Helper()
	return newBrokerTLS(t, clients, nil, nil)
}

// newBrokerTLS is newBroker with a TLS acceptor (serverTLS) and the client
// configuration the warm-up probe uses.
func newBrokerTLS(t testing.TB, clients map[string]string, serverTLS, clientTLS *tls.Config) *broker {
	t.Helper()
	b := &broker{t: t, relays: map[string]*faultnet.Relay{}, probes: map[string]quickfix.SessionID{},
		book: map[string]string{}, statusReqs: map[string]int{}, connOf: map[quickfix.SessionID]net.Conn{}, regionOf: map[quickfix.SessionID]string{},
		loggedOn: map[quickfix.SessionID]bool{}, changed: make(chan struct{})}
	port := freePort(t)
	st := quickfix.NewSettings()
	g := st.GlobalSettings()
	g.Set("SocketAcceptHost", "127.0.0.1")
	g.Set("SocketAcceptPort", strconv.Itoa(port))
	g.Set("SenderCompID", "BROKER")
	g.Set("HeartBtInt", "30")
	add := func(begin, target string) {
		s := quickfix.NewSessionSettings()
		s.Set("BeginString", begin)
		s.Set("TargetCompID", target)
		if _, err := st.AddSession(s); err != nil {
			t.Fatal(err)
		}
	}
	for comp, begin := range clients {
		add(begin, comp)
	}
	for _, region := range []string{"eu", "us"} {
		comp := uniq("PROBE" + region)
		add("FIX.4.4", comp)
		b.probes[region] = quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: comp, TargetCompID: "BROKER"}
	}
	a, err := quickfix.NewAcceptor(b, quickfix.NewMemoryStoreFactory(), st, logFactory())
	if err != nil {
		t.Fatal(err)
	}
	a.SetConnectionValidator(b)
	if serverTLS != nil {
		a.SetTLSConfig(serverTLS)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	b.acceptor = a
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for _, region := range []string{"eu", "us"} {
		r, err := faultnet.Listen(target)
		if err != nil {
			t.Fatal(err)
		}
		b.relays[region] = r
	}
	t.Cleanup(func() {
		for _, r := range b.relays {
			_ = r.Close()
		}
		a.Stop()
	})
	// quickfix sessions start on the next whole second: wait for the probe
	// sessions to answer before a Path probes them with a short timeout.
	for _, sid := range b.probes {
		probe, err := fix.Probe(fix.ProbeOptions{SessionID: sid, TLSConfig: clientTLS})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = probe(ctx, pathdialer.Endpoint{Name: "warmup", Services: map[string]string{"fix": target}})
		cancel()
		if err != nil {
			t.Fatalf("broker warm-up: %v", err)
		}
	}
	return b
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (b *broker) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Validate attributes the connection to a region and, like a broker that
// shares one session across regions, knocks the session's previous connection
// off before the new logon is processed.
func (b *broker) Validate(c net.Conn, sid quickfix.SessionID) error {
	region := ""
	for name, r := range b.relays {
		if _, ok := r.LookupUpstream(c.RemoteAddr().String()); ok {
			region = name
		}
	}
	b.mu.Lock()
	old := b.connOf[sid]
	b.connOf[sid], b.regionOf[sid] = c, region
	b.mu.Unlock()
	if old != nil {
		_ = old.Close()
		deadline := time.After(2 * time.Second)
		for {
			b.mu.Lock()
			on, ch := b.loggedOn[sid], b.changed
			b.mu.Unlock()
			if !on {
				break
			}
			select {
			case <-ch:
			case <-deadline:
				return nil
			}
		}
	}
	return nil
}

func (b *broker) OnCreate(quickfix.SessionID) {}
func (b *broker) OnLogon(sid quickfix.SessionID) {
	b.mu.Lock()
	b.loggedOn[sid] = true
	b.notify()
	b.mu.Unlock()
}
func (b *broker) OnLogout(sid quickfix.SessionID) {
	b.mu.Lock()
	b.loggedOn[sid] = false
	b.notify()
	b.mu.Unlock()
}
func (b *broker) ToAdmin(*quickfix.Message, quickfix.SessionID)     {}
func (b *broker) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }
func (b *broker) FromAdmin(m *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	mt, _ := m.Header.GetString(35)
	switch mt {
	case "A":
		reset, _ := m.Body.GetBool(141)
		b.mu.Lock()
		// Mark the session connected here, before the logon is answered
		// (OnLogon may run after the peer already has its answer).
		b.loggedOn[sid] = true
		b.logons = append(b.logons, received{MsgType: "A", Region: b.regionOf[sid], PossDup: reset, ClOrdID: sid.TargetCompID})
		b.notify()
		b.mu.Unlock()
		if text, _ := b.rejectLogon.Load().(string); text != "" {
			b.mu.Lock()
			b.loggedOn[sid] = false
			b.mu.Unlock()
			return quickfix.RejectLogon{Text: text}
		}
	case "2":
		b.resendReq.Add(1)
	case "5":
		keep, _ := m.Body.GetString(9003)
		b.mu.Lock()
		b.logouts = append(b.logouts, b.regionOf[sid]+" 9003="+keep)
		b.notify()
		b.mu.Unlock()
	}
	return nil
}

func (b *broker) FromApp(m *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	mt, _ := m.Header.GetString(35)
	clOrdID, _ := m.Body.GetString(11)
	possDup, _ := m.Header.GetBool(43)
	b.mu.Lock()
	region := b.regionOf[sid]
	b.mu.Unlock()
	switch mt {
	case "D":
		sym, _ := m.Body.GetString(55)
		token, _ := m.Body.GetString(9901)
		status := "2" // filled
		if strings.Contains(sym, "REST") {
			status = "0" // resting
		}
		b.mu.Lock()
		b.audit = append(b.audit, received{ClOrdID: clOrdID, MsgType: mt, Region: region, PossDup: possDup, Token: token})
		if strings.HasPrefix(sym, "STUCK") {
			// STUCK…: held in the broker's gateway, neither booked nor
			// answered (until the test books it: a late landing).
			b.notify()
			b.mu.Unlock()
			return nil
		}
		b.book[clOrdID] = status
		hook := b.onOrder
		b.notify()
		b.mu.Unlock()
		if hook != nil {
			hook(b, sym)
		}
		if !strings.HasPrefix(sym, "MUTE") { // MUTE…: booked, never answered
			b.execReport(sid, clOrdID, status, "", false)
		}
	case "H":
		b.mu.Lock()
		b.statusReqs[clOrdID]++
		status, ok := b.book[clOrdID]
		b.mu.Unlock()
		if sym, _ := m.Body.GetString(55); strings.Contains(sym, "SILENT") || b.statusSilent.Load() {
			return nil // …SILENT…: status requests are never answered
		}
		if !ok {
			b.execReport(sid, clOrdID, "8", "5", true)
		} else {
			b.execReport(sid, clOrdID, status, "", true)
		}
	case "AF": // OrderMassStatusRequest: every order of the book, in ClOrdID order
		req, _ := m.Body.GetString(584)
		b.mu.Lock()
		ids := slices.Sorted(maps.Keys(b.book))
		book := maps.Clone(b.book)
		b.mu.Unlock()
		for i, id := range ids {
			b.massReport(sid, req, id, book[id], i == len(ids)-1)
		}
		if len(ids) == 0 {
			b.massReport(sid, req, "", "8", true)
		}
	}
	return nil
}

// massReport answers one line of an OrderMassStatusRequest.
func (b *broker) massReport(sid quickfix.SessionID, req, clOrdID, ordStatus string, last bool) {
	m := quickfix.NewMessage()
	m.Header.SetString(35, "8")
	n := strconv.FormatInt(execSeq.Add(1), 10)
	m.Body.SetString(584, req)
	m.Body.SetString(37, "O-"+clOrdID)
	m.Body.SetString(17, "M-"+n)
	if clOrdID != "" {
		m.Body.SetString(11, clOrdID)
	}
	m.Body.SetString(39, ordStatus)
	m.Body.SetString(150, "I")
	m.Body.SetString(55, "X")
	m.Body.SetString(54, "1")
	m.Body.SetField(912, quickfix.FIXBoolean(last))
	if err := quickfix.SendToTarget(m, sid); err != nil {
		b.t.Logf("broker: mass status report: %v", err)
	}
}

var execSeq atomic.Int64

func (b *broker) execReport(sid quickfix.SessionID, clOrdID, ordStatus, rejReason string, status bool) {
	m := quickfix.NewMessage()
	m.Header.SetString(35, "8")
	n := strconv.FormatInt(execSeq.Add(1), 10)
	m.Body.SetString(37, "O-"+clOrdID)
	m.Body.SetString(17, "E-"+n)
	m.Body.SetString(11, clOrdID)
	m.Body.SetString(39, ordStatus)
	execType := ordStatus
	if status {
		execType = "I"
	}
	m.Body.SetString(150, execType)
	if sid.BeginString == "FIX.4.2" {
		m.Body.SetString(20, map[bool]string{true: "3", false: "0"}[status])
	}
	if rejReason != "" {
		m.Body.SetString(103, rejReason)
	}
	m.Body.SetString(55, "X")
	m.Body.SetString(54, "1")
	if err := quickfix.SendToTarget(m, sid); err != nil {
		b.t.Logf("broker: exec report: %v", err)
	}
}

// bookLate books an order the gateway held (a late landing).
func (b *broker) bookLate(clOrdID, ordStatus string) {
	b.mu.Lock()
	b.book[clOrdID] = ordStatus
	b.mu.Unlock()
}

// statusRequests counts the OrderStatusRequests the broker received for clOrdID.
func (b *broker) statusRequests(clOrdID string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.statusReqs[clOrdID]
}

// orders returns what the broker received for clOrdID.
func (b *broker) received(clOrdID string) []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []received
	for _, r := range b.audit {
		if r.ClOrdID == clOrdID {
			out = append(out, r)
		}
	}
	return out
}

func (b *broker) possDups() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []received
	for _, r := range b.audit {
		if r.PossDup {
			out = append(out, r)
		}
	}
	return out
}

func (b *broker) logonsOf(comp string) []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []received
	for _, r := range b.logons {
		if r.ClOrdID == comp {
			out = append(out, r)
		}
	}
	return out
}

// harness is a Path over the broker's two regions plus an Initiator.
type harness struct {
	b      *broker
	path   *pathdialer.Path
	in     *fix.Initiator
	sid    quickfix.SessionID
	sidUS  quickfix.SessionID // with a hot standby: the session of "us"
	down   map[string]*atomic.Bool
	events *pathtest.Events
	recs   chan []pathdialer.Settlement
	rec    *fix.Reconciler

	fixMu  sync.Mutex
	fixEvs []string // the Initiator's events, for failure reports
}

type harnessOpts struct {
	begin     string
	seq       fix.SequenceModel
	fixProbe  bool
	reconcile func(rec *fix.Reconciler) pathdialer.ReconcileFunc
	settings  func(*quickfix.SessionSettings)
	tls       bool
	recOpts   fix.ReconcileOptions
	opts      fix.Options // merged over the harness's own (Sequence, Reconciler, StopGrace, TLSConfig)
	cfg       func(*pathdialer.Config)
	standby   *venue.Profile // hot standby: a second session, on "us", for this venue
}

func newHarness(t testing.TB, ho harnessOpts) *harness {
	t.Helper()
	if ho.begin == "" {
		ho.begin = "FIX.4.4"
	}
	if ho.seq == fix.SequenceUnset {
		ho.seq = fix.SequenceContinue
	}
	comp := uniq("CLIENT")
	var serverTLS, clientTLS *tls.Config
	if ho.tls {
		serverTLS, clientTLS = testTLS(t)
	}
	clients := map[string]string{comp: ho.begin}
	compUS := uniq("CLIENTUS")
	if ho.standby != nil {
		clients[compUS] = ho.begin
	}
	b := newBrokerTLS(t, clients, serverTLS, clientTLS)
	probes := pathtest.NewProbes("eu", "us")
	h := &harness{b: b, down: probes.Down, events: pathtest.NewEvents(), recs: make(chan []pathdialer.Settlement, 16),
		sid: quickfix.SessionID{BeginString: ho.begin, SenderCompID: comp, TargetCompID: "BROKER"}}
	if ho.recOpts.AnswerTimeout == 0 {
		ho.recOpts.AnswerTimeout = 2 * time.Second
	}
	rec, err := fix.NewReconciler(ho.recOpts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pathtest.FastConfig([]pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Priority: 0, Primary: true, Services: map[string]string{"fix": b.relays["eu"].Addr()}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"fix": b.relays["us"].Addr()}},
	}, probes)
	if ho.fixProbe {
		probe, err := fix.Probe(fix.ProbeOptions{SessionID: b.probes["eu"], PerEndpoint: map[string]quickfix.SessionID{"us": b.probes["us"]}, TLSConfig: clientTLS})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Probe = probe
		cfg.ProbeInterval, cfg.ProbeTimeout = 200*time.Millisecond, 150*time.Millisecond // generous: TLS under -race on a shared machine
	}
	cfg.InflightGrace = 50 * time.Millisecond
	cfg.ReconcileTimeout = 5 * time.Second
	h.rec = rec
	rf := pathdialer.ReconcileFunc(rec.Reconcile)
	if ho.reconcile != nil {
		rf = ho.reconcile(rec)
	}
	cfg.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		s, err := rf(ctx, r)
		if err == nil {
			h.recs <- s
		}
		return s, err
	}
	cfg.OnEvent = h.events.Hook
	if ho.cfg != nil {
		ho.cfg(&cfg)
	}
	p := pathtest.Start(t, cfg)
	h.path = p

	st := quickfix.NewSettings()
	s := quickfix.NewSessionSettings()
	s.Set("BeginString", ho.begin)
	s.Set("SenderCompID", comp)
	s.Set("TargetCompID", "BROKER")
	s.Set("HeartBtInt", "30")
	if ho.settings != nil {
		ho.settings(s)
	}
	if _, err := st.AddSession(s); err != nil {
		t.Fatal(err)
	}
	o := ho.opts
	if ho.standby != nil {
		h.sidUS = quickfix.SessionID{BeginString: ho.begin, SenderCompID: compUS, TargetCompID: "BROKER"}
		s2 := quickfix.NewSessionSettings()
		s2.Set("BeginString", ho.begin)
		s2.Set("SenderCompID", compUS)
		s2.Set("TargetCompID", "BROKER")
		s2.Set("HeartBtInt", "30")
		if _, err := st.AddSession(s2); err != nil {
			t.Fatal(err)
		}
		o.Standby = &fix.Standby{Venue: *ho.standby, Sessions: map[string]quickfix.SessionID{"eu": h.sid, "us": h.sidUS}}
	}
	if o.LogonBackoff == (pathdialer.Backoff{}) {
		// Short: the acceptor's session starts on the next whole second, and
		// logons before that are closed unanswered.
		o.LogonBackoff = pathdialer.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	}
	if o.OnEvent == nil {
		o.OnEvent = func(e fix.Event) { h.fixMu.Lock(); h.fixEvs = append(h.fixEvs, e.String()); h.fixMu.Unlock() }
	}
	o.Sequence, o.Reconciler, o.StopGrace, o.TLSConfig = ho.seq, rec, 200*time.Millisecond, clientTLS
	in, err := fix.NewInitiator(quickfix.Application(nopApp{}), quickfix.NewMemoryStoreFactory(), st, logFactory(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() }) // runs before the path and broker close
	h.in = in
	h.waitLogon(t, "eu", 5*time.Second)
	return h
}

func (h *harness) waitLogon(t testing.TB, endpoint string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := h.in.WaitLoggedOn(ctx, h.sid, endpoint); err != nil {
		h.fixMu.Lock()
		for _, e := range h.fixEvs {
			t.Log(e)
		}
		h.fixMu.Unlock()
		t.Fatalf("no logon on %s: %v", endpoint, err)
	}
}

// waitEvent waits (bounded) for an event of kind.
func (h *harness) waitEvent(t testing.TB, kind pathdialer.EventKind) pathdialer.Event {
	t.Helper()
	return h.events.Wait(t, h.path, kind)
}

// eventually polls cond every 5 ms for up to d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-time.After(5 * time.Millisecond)
	}
}

// order builds a raw NewOrderSingle.
func order(clOrdID, symbol string) *quickfix.Message {
	m := quickfix.NewMessage()
	m.Header.SetString(35, "D")
	m.Body.SetString(11, clOrdID)
	m.Body.SetString(21, "1")
	m.Body.SetString(55, symbol)
	m.Body.SetString(54, "1")
	m.Body.SetString(60, time.Now().UTC().Format("20060102-15:04:05.000"))
	m.Body.SetString(38, "100")
	m.Body.SetString(40, "1")
	return m
}

// typedOrder builds a typed FIX 4.4 NewOrderSingle (quickfixgo/fix44).
func typedOrder(clOrdID, symbol string) newordersingle.NewOrderSingle {
	m := newordersingle.New(field.NewClOrdID(clOrdID), field.NewSide(enum.Side_BUY),
		field.NewTransactTime(time.Now()), field.NewOrdType(enum.OrdType_MARKET))
	m.SetSymbol(symbol)
	m.SetOrderQty(decimal.NewFromInt(100), 0)
	return m
}

type nopApp struct{}

func (nopApp) OnCreate(quickfix.SessionID)                       {}
func (nopApp) OnLogon(quickfix.SessionID)                        {}
func (nopApp) OnLogout(quickfix.SessionID)                       {}
func (nopApp) ToAdmin(*quickfix.Message, quickfix.SessionID)     {}
func (nopApp) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }
func (nopApp) FromAdmin(*quickfix.Message, quickfix.SessionID) quickfix.MessageRejectError {
	return nil
}
func (nopApp) FromApp(*quickfix.Message, quickfix.SessionID) quickfix.MessageRejectError { return nil }

// testTLS returns a server configuration with a fresh self-signed certificate
// for 127.0.0.1 and a client configuration that trusts only it.
func testTLS(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "simulated broker"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
	client = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return server, client
}

func logFactory() quickfix.LogFactory {
	if os.Getenv("FIX_TEST_LOG") != "" {
		return screen.NewLogFactory()
	}
	return quickfix.NewNullLogFactory()
}

// waitReconcile waits (bounded) for a successful reconcile and returns its
// settlements; on timeout it reports the Path's recent events.
func (h *harness) waitReconcile(t testing.TB) []pathdialer.Settlement {
	t.Helper()
	select {
	case s := <-h.recs:
		return s
	case <-time.After(10 * time.Second):
		for _, e := range h.path.Snapshot().Events {
			t.Log(e.String())
		}
		t.Fatal("no successful reconcile within 10s")
		return nil
	}
}

// idlePathFor is a started Path over the broker's two regions whose probes
// always succeed.
func idlePathFor(t testing.TB, b *broker) *pathdialer.Path {
	t.Helper()
	cfg := pathtest.FastConfig([]pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Primary: true, Services: map[string]string{"fix": b.relays["eu"].Addr()}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"fix": b.relays["us"].Addr()}},
	}, pathtest.NewProbes("eu", "us"))
	return pathtest.Start(t, cfg)
}
