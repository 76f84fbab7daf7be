package simbroker

import (
	"net"
	"testing"
	"time"

	"github.com/quickfixgo/enum"
	"github.com/quickfixgo/field"
	"github.com/quickfixgo/fix44/executionreport"
	"github.com/quickfixgo/fix44/newordersingle"
	"github.com/quickfixgo/fix44/ordermassstatusrequest"
	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"
	"github.com/shopspring/decimal"
)

// initiatorApp collects what a real quickfix initiator receives.
type initiatorApp struct {
	logon  chan struct{}
	logout chan struct{}
	execs  chan executionreport.ExecutionReport
	router *quickfix.MessageRouter
}

func newInitiatorApp() *initiatorApp {
	a := &initiatorApp{logon: make(chan struct{}, 4), logout: make(chan struct{}, 4), execs: make(chan executionreport.ExecutionReport, 16), router: quickfix.NewMessageRouter()}
	a.router.AddRoute(executionreport.Route(func(m executionreport.ExecutionReport, _ quickfix.SessionID) quickfix.MessageRejectError {
		a.execs <- m
		return nil
	}))
	return a
}

func (a *initiatorApp) OnCreate(quickfix.SessionID)                       {}
func (a *initiatorApp) OnLogon(quickfix.SessionID)                        { a.logon <- struct{}{} }
func (a *initiatorApp) OnLogout(quickfix.SessionID)                       { a.logout <- struct{}{} }
func (a *initiatorApp) ToAdmin(*quickfix.Message, quickfix.SessionID)     {}
func (a *initiatorApp) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }
func (a *initiatorApp) FromAdmin(*quickfix.Message, quickfix.SessionID) quickfix.MessageRejectError {
	return nil
}
func (a *initiatorApp) FromApp(m *quickfix.Message, s quickfix.SessionID) quickfix.MessageRejectError {
	return a.router.Route(m, s)
}

func waitChan[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// TestFIXQuickfixInitiatorRoundTrip drives the broker with the engine the
// FIX transport uses. quickfix leaves a goroutine behind when a logged-on
// session is stopped (its logout timer fires after the session loop ended)
// and when a logon timer outlives the session, so the test cuts the
// connection before Stop and uses a LogonTimeout longer than the process.
func TestFIXQuickfixInitiatorRoundTrip(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	host, port, err := net.SplitHostPort(b.Region("us").FIXAddr())
	if err != nil {
		t.Fatal(err)
	}
	sid := b.FIXSessionID()
	settings := quickfix.NewSettings()
	ss := quickfix.NewSessionSettings()
	ss.Set(config.BeginString, sid.BeginString)
	ss.Set(config.SenderCompID, sid.SenderCompID)
	ss.Set(config.TargetCompID, sid.TargetCompID)
	ss.Set(config.SocketConnectHost, host)
	ss.Set(config.SocketConnectPort, port)
	ss.Set(config.HeartBtInt, "30")
	ss.Set(config.ReconnectInterval, "30")
	ss.Set(config.LogonTimeout, "3600")
	if _, err := settings.AddSession(ss); err != nil {
		t.Fatal(err)
	}
	app := newInitiatorApp()
	ini, err := quickfix.NewInitiator(app, quickfix.NewMemoryStoreFactory(), settings, quickfix.NewNullLogFactory())
	if err != nil {
		t.Fatal(err)
	}
	if err := ini.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			b.Region("us").Relay(FIX).ResetAll()
			ini.Stop()
		}
	}()
	waitChan(t, app.logon, "initiator logon")

	nos := newordersingle.New(field.NewClOrdID("q-1"), field.NewSide(enum.Side_SELL),
		field.NewTransactTime(time.Now()), field.NewOrdType(enum.OrdType_MARKET))
	nos.SetSymbol("GBPUSD")
	nos.SetOrderQty(decimal.RequireFromString("2.5"), 1)
	if err := quickfix.SendToTarget(nos, sid); err != nil {
		t.Fatal(err)
	}
	for _, want := range []enum.ExecType{enum.ExecType_NEW, enum.ExecType_TRADE} {
		er := waitChan(t, app.execs, "execution report")
		et, _ := er.GetExecType()
		id, _ := er.GetClOrdID()
		if et != want || id != "q-1" {
			t.Fatalf("exec report %s for %s, want %s for q-1", et, id, want)
		}
	}
	ms := ordermassstatusrequest.New(field.NewMassStatusReqID("m-1"), field.NewMassStatusReqType(enum.MassStatusReqType_STATUS_FOR_ALL_ORDERS))
	if err := quickfix.SendToTarget(ms, sid); err != nil {
		t.Fatal(err)
	}
	er := waitChan(t, app.execs, "mass status report")
	if tot, _ := er.GetTotNumReports(); tot != 1 {
		t.Fatalf("TotNumReports = %d, want 1", tot)
	}
	if last, _ := er.GetLastRptRequested(); !last {
		t.Fatal("LastRptRequested not set on the only report")
	}
	if o, ok := b.Order("q-1"); !ok || o.Region != "us" || o.Side != "sell" || o.Qty != "2.5" {
		t.Fatalf("book q-1 = %+v", o)
	}

	b.Region("us").Relay(FIX).ResetAll()
	waitChan(t, app.logout, "initiator to see the disconnect")
	ini.Stop()
	stopped = true
}
