package fix_test

// The compatibility suite: brokerpath's initiator against FIX acceptors written
// the way simple real acceptors are (quickfixgo's examples/executor): a
// quickfix application that routes NewOrderSingle only and lets quickfix
// answer everything else itself (an OrderStatusRequest gets a
// BusinessMessageReject 380=3 with RefSeqNum and RefMsgType, and no
// BusinessRejectRefID), ResetOnLogon=Y, each region a separate OS process.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfixgo/fix44/newordersingle"
	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

const compatEnv = "BROKERPATH_FIX_COMPAT_ACCEPTOR"

// executorApp is the acceptor application: NewOrderSingle is filled at once;
// every other application message goes to quickfix's router, which rejects it
// as an unsupported message type. Every application message received is
// printed ("IN <MsgType> <ClOrdID> <PossDupFlag> <initiator's CompID>"), and
// every logon ("LOGON <CompID>") and administrative message ("ADM <CompID>
// <MsgType>") too, for the parent test.
type executorApp struct {
	router *quickfix.MessageRouter
	out    *bufio.Writer
	mass   bool // also answers OrderMassStatusRequest (AF) from its book
	mu     sync.Mutex
	n      int
	booked []string
}

func (a *executorApp) OnCreate(quickfix.SessionID)                       {}
func (a *executorApp) OnLogout(quickfix.SessionID)                       {}
func (a *executorApp) ToAdmin(*quickfix.Message, quickfix.SessionID)     {}
func (a *executorApp) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }

// print writes one line for the parent test.
func (a *executorApp) print(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(a.out, format+"\n", args...)
	_ = a.out.Flush()
}

func (a *executorApp) OnLogon(sid quickfix.SessionID) { a.print("LOGON %s", sid.TargetCompID) }
func (a *executorApp) FromAdmin(m *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	mt, _ := m.Header.GetString(35)
	a.print("ADM %s %s", sid.TargetCompID, mt)
	return nil
}
func (a *executorApp) FromApp(m *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	mt, _ := m.Header.GetString(35)
	id, _ := m.Body.GetString(11)
	pd, _ := m.Header.GetBool(43)
	a.mu.Lock()
	fmt.Fprintf(a.out, "IN %s %s %v %s\n", mt, id, pd, sid.TargetCompID)
	_ = a.out.Flush()
	booked := slices.Clone(a.booked)
	a.mu.Unlock()
	if mt == "AF" && a.mass {
		req, _ := m.Body.GetString(584)
		if len(booked) == 0 {
			booked = []string{""}
		}
		for i, id := range booked {
			er := quickfix.NewMessage()
			er.Header.SetString(35, "8")
			er.Body.SetString(584, req)
			er.Body.SetString(37, "O-"+id)
			er.Body.SetString(17, "MS-"+req+"-"+strconv.Itoa(i))
			if id != "" {
				er.Body.SetString(11, id)
			}
			er.Body.SetString(150, "I")
			er.Body.SetString(39, "2")
			er.Body.SetString(55, "X")
			er.Body.SetString(54, "1")
			if i == len(booked)-1 {
				er.Body.SetString(912, "Y")
			}
			_ = quickfix.SendToTarget(er, sid)
		}
		return nil
	}
	return a.router.Route(m, sid)
}

func (a *executorApp) onNewOrderSingle(msg newordersingle.NewOrderSingle, sid quickfix.SessionID) quickfix.MessageRejectError {
	id, err := msg.GetClOrdID()
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.n++
	n := a.n
	a.booked = append(a.booked, id)
	a.mu.Unlock()
	er := quickfix.NewMessage()
	er.Header.SetString(35, "8")
	er.Body.SetString(37, "O"+strconv.Itoa(n))
	er.Body.SetString(17, "E"+strconv.Itoa(n))
	er.Body.SetString(11, id)
	er.Body.SetString(150, "F")
	er.Body.SetString(39, "2")
	er.Body.SetString(55, "X")
	er.Body.SetString(54, "1")
	er.Body.SetString(14, "100")
	er.Body.SetString(151, "0")
	er.Body.SetString(6, "1")
	_ = quickfix.SendToTarget(er, sid)
	return nil
}

// runCompatAcceptor is the acceptor process's main.
func runCompatAcceptor() {
	port, clients := os.Getenv(compatEnv+"_PORT"), strings.Split(os.Getenv(compatEnv+"_CLIENTS"), ",")
	st := quickfix.NewSettings()
	g := st.GlobalSettings()
	g.Set("SocketAcceptHost", "127.0.0.1")
	g.Set("SocketAcceptPort", port)
	g.Set("SenderCompID", "BROKER")
	g.Set("HeartBtInt", "30")
	g.Set("ResetOnLogon", "Y")
	for _, c := range clients {
		s := quickfix.NewSessionSettings()
		s.Set("BeginString", "FIX.4.4")
		s.Set("TargetCompID", c)
		if _, err := st.AddSession(s); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
	}
	app := &executorApp{router: quickfix.NewMessageRouter(), out: bufio.NewWriter(os.Stdout), mass: os.Getenv(compatEnv+"_MASS") != ""}
	app.router.AddRoute(newordersingle.Route(app.onNewOrderSingle))
	a, err := quickfix.NewAcceptor(app, quickfix.NewMemoryStoreFactory(), st, quickfix.NewNullLogFactory())
	if err == nil {
		err = a.Start()
	}
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	app.mu.Lock()
	fmt.Fprintln(app.out, "READY")
	_ = app.out.Flush()
	app.mu.Unlock()
	select {} // until killed
}

// acceptorProc is one region: an executor acceptor in its own process.
type acceptorProc struct {
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	in     []appMsg
	logons []string // the CompID of every logon, in order
	admin  []appMsg // every administrative message (ClOrdID empty)
	done   chan struct{}
}

// appMsg is one message an acceptor process received.
type appMsg struct {
	from, msgType, clOrdID string
	possDup                bool
}

func startAcceptorProc(t testing.TB, mass bool, clients ...string) *acceptorProc {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), compatEnv+"=1", compatEnv+"_PORT="+strconv.Itoa(port), compatEnv+"_CLIENTS="+strings.Join(clients, ","))
	if mass {
		cmd.Env = append(cmd.Env, compatEnv+"_MASS=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &acceptorProc{cmd: cmd, addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "READY":
				ready <- nil
			case strings.HasPrefix(line, "ERR"):
				ready <- errors.New(line)
			case strings.HasPrefix(line, "IN "): // IN mt id pd from (id may be empty)
				f := strings.SplitN(line, " ", 5)
				if len(f) != 5 {
					panic("acceptor printed " + line)
				}
				p.mu.Lock()
				p.in = append(p.in, appMsg{msgType: f[1], clOrdID: f[2], possDup: f[3] == "true", from: f[4]})
				p.mu.Unlock()
			case strings.HasPrefix(line, "LOGON "):
				p.mu.Lock()
				p.logons = append(p.logons, strings.TrimPrefix(line, "LOGON "))
				p.mu.Unlock()
			case strings.HasPrefix(line, "ADM "): // ADM from mt
				f := strings.Fields(line)
				p.mu.Lock()
				p.admin = append(p.admin, appMsg{from: f[1], msgType: f[2]})
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(p.kill)
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("acceptor process did not start")
	}
	return p
}

// kill is a region kill: SIGKILL, no logout.
func (p *acceptorProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = p.cmd.Wait()
}

// received returns the application messages of type mt the region received,
// each as "<MsgType> <ClOrdID> <PossDupFlag>".
func (p *acceptorProc) received(mt string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.in {
		if m.msgType == mt {
			out = append(out, fmt.Sprintf("%s %s %v", m.msgType, m.clOrdID, m.possDup))
		}
	}
	return out
}

// appFrom returns the application messages the region received from the
// session with SenderCompID comp.
func (p *acceptorProc) appFrom(comp string) []appMsg {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []appMsg
	for _, m := range p.in {
		if m.from == comp {
			out = append(out, m)
		}
	}
	return out
}

// adminFrom returns the administrative messages of type mt (all types when
// mt is empty) the region received from the session with SenderCompID comp.
func (p *acceptorProc) adminFrom(comp, mt string) []appMsg {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []appMsg
	for _, m := range p.admin {
		if m.from == comp && (mt == "" || m.msgType == mt) {
			out = append(out, m)
		}
	}
	return out
}

// logonsOf returns how many times the session with SenderCompID comp logged
// on to the region.
func (p *acceptorProc) logonsOf(comp string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.logons {
		if c == comp {
			n++
		}
	}
	return n
}

// restBook is the broker's REST order API as a fallback reconciler would
// use it: GET /orders/{clOrdID} answers 404 for an order the broker never
// booked. The test's broker booked none of the lost orders.
func restFallback(t testing.TB, booked func(id string) bool) pathdialer.ReconcileFunc {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if booked(strings.TrimPrefix(r.URL.Path, "/orders/")) {
			_, _ = w.Write([]byte(`{"status":"filled"}`))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return func(ctx context.Context, rec pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
		var out []pathdialer.Settlement
		for _, tk := range rec.Tickets {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/orders/"+tk.OrderID, nil)
			if err != nil {
				return nil, err
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				return nil, err
			}
			_ = resp.Body.Close()
			s := pathdialer.Settlement{OrderID: tk.OrderID, Service: tk.Service, Detail: "REST " + resp.Status}
			switch resp.StatusCode {
			case http.StatusOK:
				s.Fate = pathdialer.FateFilled
			case http.StatusNotFound:
				s.Fate = pathdialer.FateNotReceived
			}
			out = append(out, s)
		}
		return out, nil
	}
}

type compatSetup struct {
	path    *pathdialer.Path
	in      *fix.Initiator
	sid     quickfix.SessionID // the trading session (eu's, with a standby)
	standby quickfix.SessionID // us's own session (used with Options.Standby)
	events  *pathtest.Events
	fixEvts chan fix.Event
	regions map[string]*acceptorProc // separate model; nil in the shared model
	procs   []*acceptorProc          // every acceptor process
	relays  map[string]*faultnet.Relay
	rec     *fix.Reconciler
}

// compat builds the Path and Initiator over two regions. shared: one acceptor
// process behind two relays (one session across regions); otherwise one
// acceptor process per region (a session per region).
func compat(t testing.TB, shared bool, rec fix.ReconcileOptions) *compatSetup {
	return compatWith(t, shared, rec, fix.Options{Sequence: fix.SequenceResetOnLogon}, 30)
}

// compatWith is compat with the Initiator's options (Sequence required). With
// opts.Standby set (its Venue), each region gets a session of its own and
// the Initiator keeps both logged on (a hot standby); cs.sid is eu's,
// cs.standby us's.
func compatWith(t testing.TB, shared bool, rec fix.ReconcileOptions, opts fix.Options, heartBtInt int) *compatSetup {
	t.Helper()
	cs := compatRegions(t, shared, rec)
	if err := cs.start(t, opts, heartBtInt); err != nil {
		t.Fatal(err)
	}
	return cs
}

// compatRegions starts the regions' acceptor processes (each knows both the
// trading session and the standby's), their relays and the Path over them;
// no Initiator yet (start).
func compatRegions(t testing.TB, shared bool, rec fix.ReconcileOptions) *compatSetup {
	t.Helper()
	comp := uniq("EXEC")
	compUS := uniq("EXECUS")
	probeComp := map[string]string{"eu": uniq("EXECPROBEEU"), "us": uniq("EXECPROBEUS")}
	cs := &compatSetup{events: pathtest.NewEvents(), fixEvts: make(chan fix.Event, 64), relays: map[string]*faultnet.Relay{},
		sid:     quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: comp, TargetCompID: "BROKER"},
		standby: quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: compUS, TargetCompID: "BROKER"}}
	target := map[string]string{}
	if shared {
		p := startAcceptorProc(t, rec.MassStatus, comp, probeComp["eu"], probeComp["us"])
		target["eu"], target["us"] = p.addr, p.addr
		cs.procs = []*acceptorProc{p}
	} else {
		cs.regions = map[string]*acceptorProc{
			"eu": startAcceptorProc(t, rec.MassStatus, comp, compUS, probeComp["eu"], probeComp["us"]),
			"us": startAcceptorProc(t, rec.MassStatus, comp, compUS, probeComp["eu"], probeComp["us"]),
		}
		target["eu"], target["us"] = cs.regions["eu"].addr, cs.regions["us"].addr
		cs.procs = []*acceptorProc{cs.regions["eu"], cs.regions["us"]}
	}
	for _, r := range []string{"eu", "us"} {
		relay, err := faultnet.Listen(target[r])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = relay.Close() })
		cs.relays[r] = relay
	}
	probeSID := func(r string) quickfix.SessionID {
		return quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: probeComp[r], TargetCompID: "BROKER"}
	}
	// A probe session per region: in the shared model the broker would knock
	// one region's probe off with the other's.
	probe, err := fix.Probe(fix.ProbeOptions{SessionID: probeSID("eu"), PerEndpoint: map[string]quickfix.SessionID{"us": probeSID("us")}})
	if err != nil {
		t.Fatal(err)
	}
	// quickfix starts sessions on the next whole second: wait for each region
	// to answer a logon before a Path probes it with a short timeout.
	for _, r := range []string{"eu", "us"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := probe(ctx, pathdialer.Endpoint{Name: r, Services: map[string]string{"fix": target[r]}})
		cancel()
		if err != nil {
			t.Fatalf("region %s warm-up: %v", r, err)
		}
	}
	if rec.AnswerTimeout == 0 {
		rec.AnswerTimeout = 2 * time.Second
	}
	cs.rec, err = fix.NewReconciler(rec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pathtest.FastConfig([]pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Primary: true, Services: map[string]string{"fix": cs.relays["eu"].Addr()}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"fix": cs.relays["us"].Addr()}},
	}, pathtest.NewProbes("eu", "us"))
	cfg.Probe = probe
	cfg.ProbeInterval, cfg.ProbeTimeout = 150*time.Millisecond, 120*time.Millisecond
	cfg.InflightGrace = 50 * time.Millisecond
	cfg.ReconcileTimeout = 5 * time.Second
	cfg.Reconcile = cs.rec.Reconcile
	cfg.OnEvent = cs.events.Hook
	cs.path = pathtest.Start(t, cfg)
	return cs
}

// start builds the Initiator over cs's Path (the trading session, and with
// opts.Standby the standby session on us) and waits for its logons. It
// returns NewInitiator's error, if any.
func (cs *compatSetup) start(t testing.TB, opts fix.Options, heartBtInt int) error {
	t.Helper()
	st := quickfix.NewSettings()
	sids := []quickfix.SessionID{cs.sid}
	if opts.Standby != nil {
		sids = append(sids, cs.standby)
		sb := *opts.Standby
		sb.Sessions = map[string]quickfix.SessionID{"eu": cs.sid, "us": cs.standby}
		opts.Standby = &sb
	}
	for _, sid := range sids {
		s := quickfix.NewSessionSettings()
		s.Set("BeginString", sid.BeginString)
		s.Set("SenderCompID", sid.SenderCompID)
		s.Set("TargetCompID", sid.TargetCompID)
		s.Set("HeartBtInt", strconv.Itoa(heartBtInt))
		if _, err := st.AddSession(s); err != nil {
			t.Fatal(err)
		}
	}
	opts.Reconciler, opts.StopGrace = cs.rec, 200*time.Millisecond
	opts.OnEvent = func(e fix.Event) {
		select {
		case cs.fixEvts <- e:
		default:
		}
	}
	in, err := fix.NewInitiator(nopApp{}, quickfix.NewMemoryStoreFactory(), st, logFactory(), cs.path, opts)
	if err != nil {
		return err
	}
	t.Cleanup(func() { _ = in.Close() })
	cs.in = in
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := in.WaitLoggedOn(ctx, cs.sid, "eu"); err != nil {
		t.Fatal(err)
	}
	if opts.Standby != nil {
		if err := in.WaitLoggedOn(ctx, cs.standby, "us"); err != nil {
			t.Fatal(err)
		}
	}
	return nil
}

// killRegion takes eu away with an order in flight: the order is written into
// a black hole (the region's link is cut first), then the region dies.
func (cs *compatSetup) killRegionWithOrderInFlight(t testing.TB, clOrdID string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	answered := cs.in.Stats().Answered.Load()
	if err := cs.in.SendOrder(ctx, order("warm-"+clOrdID, "FILL"), cs.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "warm-up order answered", func() bool { return cs.in.Stats().Answered.Load() > answered })
	_ = cs.relays["eu"].SetFault(faultnet.Blackhole())
	killed := time.Now()
	if err := cs.in.SendOrder(ctx, order(clOrdID, "FILL"), cs.sid); err != nil {
		t.Fatal(err)
	}
	_ = cs.relays["eu"].SetFault(faultnet.Down()) // the region's front door dies: resets both sides
	if cs.regions != nil {
		cs.regions["eu"].kill()
	}
	return killed
}

// resumeOnSurvivor sends orders until one is filled on us, returning when.
func (cs *compatSetup) firstFillOnSurvivor(t testing.TB, prefix string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := cs.in.Stats().Answered.Load()
	if err := cs.in.SendOrder(ctx, order(prefix+"-after", "FILL"), cs.sid); err != nil {
		t.Fatalf("order on the survivor: %v", err)
	}
	eventually(t, 10*time.Second, "order on the survivor answered", func() bool { return cs.in.Stats().Answered.Load() > before })
	return time.Now()
}

// waitSettled waits for the reconcile that settles id.
func (cs *compatSetup) waitSettled(t testing.TB, id string) map[string]pathdialer.Settlement {
	t.Helper()
	for {
		got := settlementsByID(cs.events.Wait(t, cs.path, pathdialer.EventReconcileSuccess).Settlements)
		if _, ok := got[id]; ok {
			return got
		}
	}
}

// booked reports whether any acceptor process booked (received a
// NewOrderSingle for) id: the broker's book, for a truthful REST fallback.
func (cs *compatSetup) booked(id string) bool {
	for _, p := range cs.procs {
		p.mu.Lock()
		ok := slices.ContainsFunc(p.in, func(m appMsg) bool { return m.msgType == "D" && m.clOrdID == id })
		p.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// assertNoPossDup: no acceptor ever received an order marked PossDupFlag=Y,
// and each order at most once.
func (cs *compatSetup) assertNoPossDup(t testing.TB) {
	t.Helper()
	seen := map[string]int{}
	for _, p := range cs.procs {
		for _, l := range p.received("D") {
			if strings.HasSuffix(l, " true") {
				t.Errorf("order resent as PossDup: %s", l)
			}
			seen[strings.Fields(l)[1]]++
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("order %s reached the broker %d times", id, n)
		}
	}
}

func (cs *compatSetup) dumpEvents(t testing.TB) {
	for _, e := range cs.path.Snapshot().Events {
		t.Log(e.String())
	}
}

func TestCompatSeparateSessionsRESTFallback(t *testing.T) {
	cs := compat(t, false, fix.ReconcileOptions{Fallback: restFallback(t, func(string) bool { return false })})
	killed := cs.killRegionWithOrderInFlight(t, "inflight-1")
	got := cs.waitSettled(t, "inflight-1")
	if s := got["inflight-1"]; s.Fate != pathdialer.FateNotReceived || !strings.Contains(s.Detail, "REST 404") {
		t.Errorf("inflight-1 settled %v (%s), want NOT_RECEIVED by the REST fallback", s.Fate, s.Detail)
	}
	filled := cs.firstFillOnSurvivor(t, "sep")
	t.Logf("separate sessions, REST fallback: region kill → first fill on the survivor %v", filled.Sub(killed).Round(time.Millisecond))
	if d := filled.Sub(killed); d > 5*time.Second {
		t.Errorf("trading resumed %v after the kill, want < 5s", d)
	}
	// The survivor was asked about the order once: it answered "unsupported",
	// and nobody asked it again.
	if h := cs.regions["us"].received("H"); len(h) != 1 {
		t.Errorf("survivor received %d OrderStatusRequests, want exactly 1: %v", len(h), h)
	}
	assertOneUnsupportedEvent(t, cs)
	cs.assertNoPossDup(t)
	for _, region := range []string{"us"} {
		for _, l := range cs.regions[region].received("D") {
			if strings.HasSuffix(l, " true") {
				t.Errorf("order resent as PossDup in %s: %s", region, l)
			}
			if strings.HasPrefix(l, "D inflight-1 ") {
				t.Errorf("the in-flight order reached the survivor: %s", l)
			}
		}
	}
}

func assertOneUnsupportedEvent(t *testing.T, cs *compatSetup) {
	t.Helper()
	n := 0
	for {
		select {
		case e := <-cs.fixEvts:
			if e.Kind == fix.EventStatusUnsupported {
				n++
				if !strings.Contains(e.Detail, "380=3") {
					t.Errorf("unsupported event does not name the answer: %s", e)
				}
			}
			continue
		default:
		}
		break
	}
	if n != 1 {
		t.Errorf("%d EventStatusUnsupported, want exactly 1", n)
	}
}

func TestCompatSharedSessionAcceptUndetermined(t *testing.T) {
	cs := compat(t, true, fix.ReconcileOptions{AcceptUndetermined: true})
	killed := cs.killRegionWithOrderInFlight(t, "inflight-2")
	s := cs.waitSettled(t, "inflight-2")["inflight-2"]
	if s.Fate != pathdialer.FateUndetermined || !strings.Contains(s.Detail, "does not support OrderStatusRequest") {
		t.Errorf("inflight-2 settled %v (%s), want UNDETERMINED naming the unsupported request", s.Fate, s.Detail)
		cs.dumpEvents(t)
	}
	filled := cs.firstFillOnSurvivor(t, "shared")
	t.Logf("shared session, AcceptUndetermined: region cut → first fill on the survivor %v", filled.Sub(killed).Round(time.Millisecond))
	if d := filled.Sub(killed); d > 5*time.Second {
		t.Errorf("trading resumed %v after the cut, want < 5s", d)
	}
	assertOneUnsupportedEvent(t, cs)
	cs.assertNoPossDup(t)
}

// With no fallback configured the Path halts, loudly: the reason names the
// missing capability and the options that fix it, and the survivor is asked
// once, not every 250 ms.
func TestCompatNoFallbackHaltsLoudly(t *testing.T) {
	cs := compat(t, false, fix.ReconcileOptions{})
	cs.killRegionWithOrderInFlight(t, "inflight-3")
	halt := cs.events.Wait(t, cs.path, pathdialer.EventHalt)
	for _, want := range []string{"OrderStatusRequest", "ReconcileOptions.Fallback", "AcceptUndetermined", "inflight-3"} {
		if !strings.Contains(halt.Cause, want) {
			t.Errorf("halt reason %q does not name %q", halt.Cause, want)
		}
	}
	_, err := cs.path.GateState()
	if !errors.Is(err, fix.ErrStatusUnsupported) && !strings.Contains(fmt.Sprint(err), "OrderStatusRequest") {
		t.Errorf("gate cause %v", err)
	}
	if h := cs.regions["us"].received("H"); len(h) != 1 {
		t.Errorf("survivor received %d OrderStatusRequests, want exactly 1", len(h))
	}
	assertOneUnsupportedEvent(t, cs)
	cs.assertNoPossDup(t)
}

// The wrong sequence model against an acceptor that resets at every logon
// (SequenceContinue vs ResetOnLogon=Y): every reconnect is refused by our own
// quickfix ("MsgSeqNum too low"). It is diagnosed, backed off, and halted
// with a reason that names the model to choose; no logon storm.
func TestCompatWrongSequenceModelIsDiagnosedAndHalted(t *testing.T) {
	cs := compatWith(t, true, fix.ReconcileOptions{AcceptUndetermined: true}, fix.Options{
		Sequence: fix.SequenceContinue, LogonFailureLimit: 4,
		LogonBackoff: pathdialer.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond},
	}, 30)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 3 { // move the sequence numbers past 1
		if err := cs.in.SendOrder(ctx, order(fmt.Sprintf("seq-%d", i), "FILL"), cs.sid); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 5*time.Second, "orders answered", func() bool { return cs.in.Stats().Answered.Load() == 3 })
	start := time.Now()
	cs.relays["eu"].ResetAll()
	var failed []fix.Event
	var halt fix.Event
	deadline := time.After(15 * time.Second)
	for halt.Kind == 0 {
		select {
		case e := <-cs.fixEvts:
			switch e.Kind {
			case fix.EventLogonFailed:
				failed = append(failed, e)
			case fix.EventLogonHalted:
				halt = e
			}
		case <-deadline:
			t.Fatalf("no logon halt; failures: %v", failed)
		}
	}
	t.Logf("wrong model: %d refused logons in %v, then halted: %s", len(failed), time.Since(start).Round(time.Millisecond), halt.Detail)
	if len(failed) != 4 {
		t.Errorf("%d logon failures before the halt, want 4", len(failed))
	}
	for _, e := range failed {
		if e.Cause != fix.LogonSeqTooLow {
			t.Errorf("diagnosis %s, want %s: %s", e.Cause, fix.LogonSeqTooLow, e)
		}
	}
	if !strings.Contains(halt.Detail, "SequenceResetOnLogon") {
		t.Errorf("halt does not name the model to choose: %s", halt.Detail)
	}
	err := cs.in.SendOrder(ctx, order("seq-after", "FILL"), cs.sid)
	if !errors.Is(err, fix.ErrLogonHalted) || !errors.Is(err, pathdialer.ErrTradingHalted) {
		t.Errorf("SendOrder after the halt: %v", err)
	}
}

// An acceptor that answers OrderMassStatusRequest but not OrderStatusRequest,
// one book behind both regions: the order lost in the cut is absent from the
// complete list (NOT_RECEIVED), the one filled before it is FILLED.
func TestCompatSharedSessionMassStatus(t *testing.T) {
	cs := compat(t, true, fix.ReconcileOptions{MassStatus: true, SharedBook: true})
	killed := cs.killRegionWithOrderInFlight(t, "inflight-4")
	got := cs.waitSettled(t, "inflight-4")
	if s := got["inflight-4"]; s.Fate != pathdialer.FateNotReceived || !strings.Contains(s.Detail, "OrderMassStatus") {
		t.Errorf("inflight-4 settled %v (%s), want NOT_RECEIVED from the mass status", s.Fate, s.Detail)
	}
	filled := cs.firstFillOnSurvivor(t, "mass")
	t.Logf("shared session, mass status: region cut → first fill on the survivor %v", filled.Sub(killed).Round(time.Millisecond))
	assertOneUnsupportedEvent(t, cs)
	cs.assertNoPossDup(t)
}

// A broker that does not fence: one session across regions, and the old
// region's connection is not closed (a black hole), so the broker refuses the
// session on the new region until it times the old one out (about 2.4 ×
// HeartBtInt in quickfix). FIX resumes within that release plus one logon
// backoff (at most LogonBackoff.Max), without storming the broker meanwhile.
func TestCompatBrokerWithoutFenceResumesAfterSessionRelease(t *testing.T) {
	const hb = 1 // seconds
	backoff := pathdialer.Backoff{Initial: 100 * time.Millisecond, Max: 800 * time.Millisecond}
	cs := compatWith(t, true, fix.ReconcileOptions{AcceptUndetermined: true},
		fix.Options{Sequence: fix.SequenceResetOnLogon, LogonBackoff: backoff, LogonFailureLimit: -1}, hb)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cs.in.SendOrder(ctx, order("nf-warm", "FILL"), cs.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "warm-up answered", func() bool { return cs.in.Stats().Answered.Load() == 1 })
	cut := time.Now()
	_ = cs.relays["eu"].SetFault(faultnet.Blackhole())
	t.Cleanup(func() {
		if t.Failed() {
			cs.dumpEvents(t)
			for len(cs.fixEvts) > 0 {
				t.Log(<-cs.fixEvts)
			}
		}
	})
	cs.events.Wait(t, cs.path, pathdialer.EventRelease) // flow released on us
	filled := cs.firstFillOnSurvivor(t, "nf")
	took := filled.Sub(cut)
	var refused int
	for len(cs.fixEvts) > 0 {
		if e := <-cs.fixEvts; e.Kind == fix.EventLogonFailed {
			refused++
		}
	}
	release := time.Duration(2.4 * float64(hb) * float64(time.Second))
	t.Logf("broker without fence (HeartBtInt %ds): cut → first fill on the survivor %v; %d refused logons meanwhile; bound: session release (~%v) + LogonBackoff.Max %v + detection",
		hb, took.Round(time.Millisecond), refused, release, backoff.Max)
	if bound := release + backoff.Max + 2*time.Second; took > bound {
		t.Errorf("resumed after %v, want within %v", took, bound)
	}
	if refused > 20 {
		t.Errorf("%d refused logons in %v: a storm", refused, took)
	}
}
