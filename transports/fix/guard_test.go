package fix_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/faultnet"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// The fencing token is written into every order as the configured tag, and
// follows the ticket's token across a switch.
func TestTokenTagCarriesTheTicketGeneration(t *testing.T) {
	h := newHarness(t, harnessOpts{opts: fix.Options{TokenTag: 9901}})
	var mu sync.Mutex
	gens := map[string]uint64{}
	fix.SetTicketHook(h.in, func(tk *pathdialer.Ticket) { mu.Lock(); gens[tk.OrderID] = tk.Token; mu.Unlock() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.in.SendOrder(ctx, order("tok-1", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "tok-1 answered", func() bool { return h.in.Stats().Answered.Load() == 1 })
	h.down["eu"].Store(true)
	_ = h.b.relays["eu"].SetFault(faultnet.Down())
	h.waitEvent(t, pathdialer.EventRelease)
	if err := h.in.SendOrder(ctx, order("tok-2", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "tok-2 at the broker", func() bool { return len(h.b.received("tok-2")) == 1 })
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"tok-1", "tok-2"} {
		r := h.b.received(id)
		if len(r) != 1 || r[0].Token != strconv.FormatUint(gens[id], 10) {
			t.Errorf("%s at the broker: %+v, want token %d", id, r, gens[id])
		}
	}
	if gens["tok-2"] <= gens["tok-1"] {
		t.Errorf("token did not move with the switch: %v", gens)
	}
}

// A ticket whose decision lapsed is not sent: ErrNotSent wrapping
// pathdialer.ErrTicketExpired, the ticket withdrawn, nothing at the broker.
func TestExpiredTicketIsNotSent(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	fix.SetTicketHook(h.in, func(tk *pathdialer.Ticket) { tk.ValidUntil = time.Now().Add(-time.Millisecond) })
	err := h.in.SendOrder(context.Background(), order("exp-1", "FILL"), h.sid)
	if !errors.Is(err, fix.ErrNotSent) || !errors.Is(err, pathdialer.ErrTicketExpired) {
		t.Fatalf("err = %v, want ErrNotSent wrapping ErrTicketExpired", err)
	}
	if snap := h.path.Snapshot(); snap.InFlight != 0 || snap.Unknown != 0 {
		t.Errorf("ticket not withdrawn: in flight %d, unknown %d", snap.InFlight, snap.Unknown)
	}
	// The same ClOrdID goes out once the decision is valid again.
	fix.SetTicketHook(h.in, nil)
	if err := h.in.SendOrder(context.Background(), order("exp-1", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "exp-1 at the broker", func() bool { return len(h.b.received("exp-1")) == 1 })
}

// A nil Initiator (NewInitiator failed, error ignored) gives a clear error,
// not a panic.
func TestNilInitiatorIsAnErrorNotAPanic(t *testing.T) {
	in, err := fix.NewInitiator(nopApp{}, quickfix.NewMemoryStoreFactory(), quickfix.NewSettings(), quickfix.NewNullLogFactory(),
		idlePath(t, "127.0.0.1:1"), fix.Options{Sequence: fix.SequenceContinue})
	if in != nil || !errors.Is(err, fix.ErrInvalidOptions) || !strings.HasPrefix(err.Error(), "fix: ") {
		t.Fatalf("NewInitiator = %v, %v", in, err)
	}
	sid := quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: "A", TargetCompID: "B"}
	if err := in.SendOrder(context.Background(), order("x", "FILL"), sid); !errors.Is(err, fix.ErrNoInitiator) {
		t.Errorf("SendOrder on nil: %v", err)
	}
	if err := in.Send(quickfix.NewMessage(), sid); !errors.Is(err, fix.ErrNoInitiator) {
		t.Errorf("Send on nil: %v", err)
	}
	if err := in.Close(); !errors.Is(err, fix.ErrNoInitiator) {
		t.Errorf("Close on nil: %v", err)
	}
	if err := in.Resume(); !errors.Is(err, fix.ErrNoInitiator) {
		t.Errorf("Resume on nil: %v", err)
	}
	if in.Stats().Orders.Load() != 0 || in.SessionIDs() != nil {
		t.Error("nil Initiator reports state")
	}
}

type captureLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *captureLog) Create() (quickfix.Log, error) { return c, nil }
func (c *captureLog) CreateSessionLog(quickfix.SessionID) (quickfix.Log, error) {
	return c, nil
}
func (c *captureLog) OnIncoming(b []byte) {
	c.mu.Lock()
	c.buf.Write(b)
	c.buf.WriteByte('\n')
	c.mu.Unlock()
}
func (c *captureLog) OnOutgoing(b []byte) {
	c.mu.Lock()
	c.buf.Write(b)
	c.buf.WriteByte('\n')
	c.mu.Unlock()
}
func (c *captureLog) OnEvent(s string) { c.mu.Lock(); c.buf.WriteString(s + "\n"); c.mu.Unlock() }
func (c *captureLog) OnEventf(f string, a ...any) {
	c.OnEvent(f) // the wrapper formats; this is never reached through it
}
func (c *captureLog) String() string { c.mu.Lock(); defer c.mu.Unlock(); return c.buf.String() }

func TestMaskFIX(t *testing.T) {
	in := "8=FIX.4.4\x019=80\x0135=A\x01553=alice\x01554=s3cret\x01925=n3w\x0195=5\x0196=a\x01b=c\x01108=30\x0110=000\x01"
	got := string(fix.MaskFIX([]byte(in)))
	want := "8=FIX.4.4\x019=80\x0135=A\x01553=***\x01554=***\x01925=***\x0195=5\x0196=***\x01108=30\x0110=000\x01"
	if got != want {
		t.Fatalf("masked\n%q\nwant\n%q", got, want)
	}
	plain := []byte("8=FIX.4.4\x0135=0\x01")
	if got := fix.MaskFIX(plain); &got[0] != &plain[0] {
		t.Error("a message without secrets was copied")
	}
	ev := "Message Rejected: bad\x01554=hunter2\x01"
	if got := string(fix.MaskFIX([]byte(ev))); strings.Contains(got, "hunter2") {
		t.Errorf("event text not masked: %q", got)
	}
}

// The username and password set in ToAdmin reach the broker but never the
// user's quickfix log, through brokerpath's initiator.
type passwordApp struct{ nopApp }

func (passwordApp) ToAdmin(m *quickfix.Message, _ quickfix.SessionID) {
	if mt, _ := m.Header.GetString(35); mt == "A" {
		m.Body.SetString(553, "alice")
		m.Body.SetString(554, "hunter2-secret")
	}
}

func TestPasswordNeverInQuickfixLog(t *testing.T) {
	comp := uniq("PW")
	b := newBroker(t, map[string]string{comp: "FIX.4.4"})
	p := idlePathFor(t, b)
	st := quickfix.NewSettings()
	s := quickfix.NewSessionSettings()
	s.Set("BeginString", "FIX.4.4")
	s.Set("SenderCompID", comp)
	s.Set("TargetCompID", "BROKER")
	s.Set("HeartBtInt", "30")
	sid, err := st.AddSession(s)
	if err != nil {
		t.Fatal(err)
	}
	logs := &captureLog{}
	in, err := fix.NewInitiator(passwordApp{}, quickfix.NewMemoryStoreFactory(), st, logs, p,
		fix.Options{Sequence: fix.SequenceContinue, StopGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := in.WaitLoggedOn(ctx, sid, ""); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "553=***") || !strings.Contains(out, "554=***") {
		t.Fatalf("the logon was not logged as expected:\n%q", out)
	}
	if strings.Contains(out, "hunter2") || strings.Contains(out, "alice") {
		t.Fatalf("username or password in quickfix's log:\n%q", out)
	}
}

// A broker refusing logons is not stormed: each failure is diagnosed and
// reported with a jittered, bounded backoff; after LogonFailureLimit the
// session halts (no connection at all) and SendOrder fails at once naming the
// cause; Resume logs on again.
func TestLogonRefusalsBackOffAndHalt(t *testing.T) {
	var mu sync.Mutex
	var evs []fix.Event
	h := newHarness(t, harnessOpts{opts: fix.Options{
		LogonFailureLimit: 3,
		LogonBackoff:      pathdialer.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond},
		OnEvent:           func(e fix.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() },
	}})
	comp := h.sid.SenderCompID
	h.b.rejectLogon.Store("Invalid password for user")
	before := len(h.b.logonsOf(comp))
	h.b.relays["eu"].ResetAll() // the session drops and reconnects into refusals
	halted := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs {
			if e.Kind == fix.EventLogonHalted {
				return true
			}
		}
		return false
	}
	eventually(t, 10*time.Second, "logon halt", halted)
	start := time.Now()
	err := h.in.SendOrder(context.Background(), order("lh-1", "FILL"), h.sid)
	if !errors.Is(err, fix.ErrLogonHalted) || !errors.Is(err, pathdialer.ErrTradingHalted) {
		t.Fatalf("SendOrder while halted: %v", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("halted SendOrder took %v", d)
	}
	if !strings.Contains(err.Error(), "credentials") {
		t.Errorf("halt reason does not name the cause: %v", err)
	}
	attempts := len(h.b.logonsOf(comp)) - before
	if attempts != 3 {
		t.Errorf("%d logon attempts reached the broker, want exactly the limit 3", attempts)
	}
	// Halted means halted: no further attempt.
	<-time.After(300 * time.Millisecond) // a window in which a storm would show (not a wait for a result)
	if n := len(h.b.logonsOf(comp)) - before; n != attempts {
		t.Errorf("logons continued while halted: %d → %d", attempts, n)
	}
	mu.Lock()
	var failed int
	for _, e := range evs {
		if e.Kind == fix.EventLogonFailed {
			failed++
			if e.Cause != fix.LogonCredentials || e.Backoff > 100*time.Millisecond || !strings.Contains(e.Detail, "Invalid password") {
				t.Errorf("logon failure event: %s", e)
			}
		}
	}
	mu.Unlock()
	if failed != 3 {
		t.Errorf("%d EventLogonFailed, want 3", failed)
	}
	h.b.rejectLogon.Store("")
	if err := h.in.Resume(); err != nil {
		t.Fatal(err)
	}
	h.waitLogon(t, "eu", 5*time.Second)
	if err := h.in.SendOrder(context.Background(), order("lh-2", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
}

// However often the session drops, an unanswered order is handed to
// reconciliation once (no "late finish" per drop), and its answer, even
// repeated, finishes it once.
func TestOneUnknownAndOneLateFinishPerOrder(t *testing.T) {
	h := newHarness(t, harnessOpts{reconcile: func(*fix.Reconciler) pathdialer.ReconcileFunc {
		// A reconciler that learns nothing: the order stays open.
		return func(_ context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
			var out []pathdialer.Settlement
			for _, tk := range r.Tickets {
				out = append(out, pathdialer.Settlement{OrderID: tk.OrderID, Service: tk.Service, Fate: pathdialer.FateUndetermined})
			}
			return out, nil
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.in.SendOrder(ctx, order("mute-1", "MUTEREST"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "mute-1 at the broker", func() bool { return len(h.b.received("mute-1")) == 1 })
	count := func(kind pathdialer.EventKind) int {
		n := 0
		for _, e := range h.path.Snapshot().Events {
			if e.Kind == kind && (kind != pathdialer.EventReconcileSuccess || e.Cause == "settle unknown outcomes") {
				n++
			}
		}
		return n
	}
	drop := func(i int) {
		logons := h.in.Stats().Logons.Load()
		h.b.relays["eu"].ResetAll()
		eventually(t, 10*time.Second, fmt.Sprintf("logon after drop %d", i), func() bool { return h.in.Stats().Logons.Load() > logons })
	}
	drop(1)
	// The Path hands the unknown order to reconciliation (SettleUnknown).
	eventually(t, 10*time.Second, "reconcile of the dropped order", func() bool { return count(pathdialer.EventReconcileSuccess) >= 1 })
	drop(2)
	drop(3)
	if n := count(pathdialer.EventLateTicket); n != 0 {
		for _, e := range h.path.Snapshot().Events {
			t.Log(e.String())
		}
		t.Fatalf("%d late-finish events after 2 more drops, want 0 (one unknown transition per order)", n)
	}
	// The broker answers late, twice.
	brokerSide := quickfix.SessionID{BeginString: h.sid.BeginString, SenderCompID: "BROKER", TargetCompID: h.sid.SenderCompID}
	h.b.execReport(brokerSide, "mute-1", "2", "", false)
	h.b.execReport(brokerSide, "mute-1", "2", "", false)
	eventually(t, 5*time.Second, "late finish", func() bool { return count(pathdialer.EventLateTicket) >= 1 })
	// (an answered order after both reports shows they were both processed)
	probe := order("probe-1", "FILL") // an answered order after both reports: they were processed
	if err := h.in.SendOrder(ctx, probe, h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "probe-1 answered", func() bool { return len(h.b.received("probe-1")) == 1 && h.in.Stats().Answered.Load() >= 2 })
	if n := count(pathdialer.EventLateTicket); n != 1 {
		t.Errorf("%d late-finish events, want exactly 1", n)
	}
}

// A logon halt decided on one endpoint is lifted when the Path moves to
// another: the session tries the new endpoint's logon without Resume.
func TestLogonHaltLiftedWhenThePathMoves(t *testing.T) {
	halted := make(chan struct{}, 1)
	h := newHarness(t, harnessOpts{opts: fix.Options{
		LogonFailureLimit: 2,
		OnEvent: func(e fix.Event) {
			if e.Kind == fix.EventLogonHalted {
				select {
				case halted <- struct{}{}:
				default:
				}
			}
		},
	}})
	h.b.rejectLogon.Store("Invalid password")
	h.b.relays["eu"].ResetAll()
	select {
	case <-halted:
	case <-time.After(10 * time.Second):
		t.Fatal("no logon halt")
	}
	h.b.rejectLogon.Store("")
	h.down["eu"].Store(true)
	h.waitEvent(t, pathdialer.EventSwitch)
	h.waitLogon(t, "us", 5*time.Second)
	if err := h.in.SendOrder(context.Background(), order("moved-1", "FILL"), h.sid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "moved-1 in us", func() bool {
		r := h.b.received("moved-1")
		return len(r) == 1 && r[0].Region == "us"
	})
}
