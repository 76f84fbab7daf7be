package fix_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"strconv"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// A quickfix application on a two-region path: the FIX probe decides health,
// the FIX reconciler settles in-flight orders after a switch, and orders go
// through SendOrder. It runs offline: an in-process quickfix acceptor stands
// in for the broker, reachable in both regions.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	brokerAddr, stopBroker, err := exampleBroker("ACME", "ACME-PROBE")
	if err != nil {
		log.Fatal(err)
	}
	defer stopBroker()

	rec, err := fix.NewReconciler(fix.ReconcileOptions{
		AnswerTimeout: 2 * time.Second,
		// Fallback: restReconcile, // when the broker does not answer OrderStatusRequest
	})
	if err != nil {
		log.Fatal(err)
	}
	probe, err := fix.Probe(fix.ProbeOptions{
		SessionID: quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: "ACME-PROBE", TargetCompID: "BROKER"},
	})
	if err != nil {
		log.Fatal(err)
	}
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		// In production: "fix-eu.broker.example:9880", "fix-us.broker.example:9880".
		{Name: "eu", Region: "eu-west-1", Primary: true, Services: map[string]string{"fix": brokerAddr}},
		{Name: "us", Region: "us-east-1", Priority: 1, Services: map[string]string{"fix": brokerAddr}},
	}
	cfg.Probe = probe
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = rec.Reconcile // or pathdialer.ReconcileAll(restReconcile, rec.Reconcile)
	path, err := pathdialer.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer path.Close()
	if err := path.Start(ctx); err != nil {
		log.Fatal(err)
	}

	// The application's own quickfix settings: no SocketConnectHost needed.
	settings := quickfix.NewSettings()
	s := quickfix.NewSessionSettings()
	s.Set("BeginString", "FIX.4.4")
	s.Set("SenderCompID", "ACME")
	s.Set("TargetCompID", "BROKER")
	s.Set("HeartBtInt", "30")
	sid, err := settings.AddSession(s)
	if err != nil {
		log.Fatal(err)
	}
	app := &fillsApp{fills: make(chan string, 1)} // your application
	in, err := fix.NewInitiator(app, quickfix.NewMemoryStoreFactory(), settings, quickfix.NewNullLogFactory(), path,
		fix.Options{
			Sequence:   fix.SequenceContinue, // the broker's model: see the package documentation
			Reconciler: rec,
			TokenTag:   9901, // only if the broker checks fencing tokens
		})
	if err != nil {
		log.Fatal(err) // never use in after an error
	}
	defer in.Close()
	if err := in.WaitLoggedOn(ctx, sid, ""); err != nil {
		log.Fatal(err)
	}
	ep, _ := in.LoggedOn(sid)
	fmt.Println("logged on to", ep)

	nos := quickfix.NewMessage() // or a typed fix44/newordersingle message
	nos.Header.SetString(35, "D")
	nos.Body.SetString(11, "ord-1")
	nos.Body.SetString(55, "ACME")
	nos.Body.SetString(54, "1")
	nos.Body.SetString(38, "100")
	nos.Body.SetString(40, "1")
	nos.Body.SetString(60, time.Now().UTC().Format("20060102-15:04:05.000"))
	if err := in.SendOrder(ctx, nos, sid); err != nil {
		log.Fatal(err) // pathdialer.ErrTradingHalted, fix.ErrNotSent (send again, same ClOrdID), ...
	}
	select {
	case f := <-app.fills:
		fmt.Println(f)
	case <-ctx.Done():
		log.Fatal(ctx.Err())
	}
	// Output:
	// logged on to eu
	// ord-1 filled, token 9901=0
}

// fillsApp is the user's quickfix application: it reports fills.
type fillsApp struct {
	nopApp
	fills chan string
}

func (a *fillsApp) FromApp(m *quickfix.Message, _ quickfix.SessionID) quickfix.MessageRejectError {
	if mt, _ := m.Header.GetString(35); mt == "8" {
		if st, _ := m.Body.GetString(39); st == "2" {
			id, _ := m.Body.GetString(11)
			tok, _ := m.Body.GetString(9901)
			a.fills <- fmt.Sprintf("%s filled, token 9901=%s", id, tok)
		}
	}
	return nil
}

// exampleBroker starts an in-process quickfix acceptor that fills every
// NewOrderSingle (echoing tag 9901) and waits until it answers a logon.
func exampleBroker(client, probe string) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	st := quickfix.NewSettings()
	g := st.GlobalSettings()
	g.Set("SocketAcceptHost", "127.0.0.1")
	g.Set("SocketAcceptPort", strconv.Itoa(port))
	g.Set("SenderCompID", "BROKER")
	g.Set("HeartBtInt", "30")
	for _, c := range []string{client, probe} {
		s := quickfix.NewSessionSettings()
		s.Set("BeginString", "FIX.4.4")
		s.Set("TargetCompID", c)
		if _, err := st.AddSession(s); err != nil {
			return "", nil, err
		}
	}
	a, err := quickfix.NewAcceptor(exampleExecutor{}, quickfix.NewMemoryStoreFactory(), st, quickfix.NewNullLogFactory())
	if err != nil {
		return "", nil, err
	}
	if err := a.Start(); err != nil {
		return "", nil, err
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// quickfix starts sessions on the next whole second: wait for a logon answer.
	p, err := fix.Probe(fix.ProbeOptions{SessionID: quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: probe, TargetCompID: "BROKER"}})
	if err != nil {
		a.Stop()
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p(ctx, pathdialer.Endpoint{Name: "warm-up", Services: map[string]string{"fix": addr}}); err != nil {
		a.Stop()
		return "", nil, err
	}
	return addr, a.Stop, nil
}

type exampleExecutor struct{ nopApp }

func (exampleExecutor) FromApp(m *quickfix.Message, sid quickfix.SessionID) quickfix.MessageRejectError {
	if mt, _ := m.Header.GetString(35); mt != "D" {
		return quickfix.UnsupportedMessageType()
	}
	id, _ := m.Body.GetString(11)
	er := quickfix.NewMessage()
	er.Header.SetString(35, "8")
	er.Body.SetString(37, "O-"+id)
	er.Body.SetString(17, "E-"+id)
	er.Body.SetString(11, id)
	er.Body.SetString(150, "F")
	er.Body.SetString(39, "2")
	er.Body.SetString(55, "ACME")
	er.Body.SetString(54, "1")
	er.Body.SetString(14, "100")
	er.Body.SetString(151, "0")
	er.Body.SetString(6, "1")
	if tok, err := m.Body.GetString(9901); err == nil {
		er.Body.SetString(9901, tok)
	}
	_ = quickfix.SendToTarget(er, sid)
	return nil
}
