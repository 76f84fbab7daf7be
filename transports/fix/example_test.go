package fix_test

import (
	"context"
	"log"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// A quickfix application on a two-region path: the FIX probe decides health,
// the FIX reconciler settles in-flight orders after a switch, and orders go
// through SendOrder. (Compiled, not run: it needs a broker.)
func Example() {
	ctx := context.Background()
	rec, err := fix.NewReconciler(fix.ReconcileOptions{AnswerTimeout: 2 * time.Second})
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
		{Name: "eu", Region: "eu-west-1", Primary: true, Services: map[string]string{"fix": "fix-eu.broker.example:9880"}},
		{Name: "us", Region: "us-east-1", Priority: 1, Services: map[string]string{"fix": "fix-us.broker.example:9880"}},
	}
	cfg.Probe = probe
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconciler = rec.Reconcile // or pathdialer.ReconcileAll(restReconcile, rec.Reconcile)
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
	var app quickfix.Application = nopApp{} // your application
	in, err := fix.NewInitiator(app, quickfix.NewMemoryStoreFactory(), settings, quickfix.NewNullLogFactory(), path,
		fix.Options{Sequence: fix.SequenceContinue, Reconciler: rec})
	if err != nil {
		log.Fatal(err)
	}
	defer in.Close()

	nos := quickfix.NewMessage() // or a typed fix44/newordersingle message
	nos.Header.SetString(35, "D")
	nos.Body.SetString(11, "ord-1")
	nos.Body.SetString(55, "ACME")
	nos.Body.SetString(54, "1")
	if err := in.SendOrder(ctx, nos, sid); err != nil {
		log.Print(err) // pathdialer.ErrTradingHalted, fix.ErrNotSent, ...
	}
}
