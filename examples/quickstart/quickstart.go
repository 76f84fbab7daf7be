package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"
	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"
	"github.com/quickfixgo/tag"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// Region is one path to the broker account: its REST base URL, its
// WebSocket URL and its FIX host:port.
type Region struct {
	Name, REST, WS, FIX string
}

// Broker is what the broker gives you: the regions (primary first), the CA
// its certificates chain to (nil: the system's roots), an API key, your FIX
// session and a market data stream.
type Broker struct {
	Regions []Region
	RootCAs *x509.CertPool
	APIKey  string
	FIX     quickfix.SessionID
	Stream  string
}

// run places one order over REST and one over FIX and reads one price, all
// over the path brokerpath chooses.
func run(ctx context.Context, b Broker, out io.Writer) error {
	tlsCfg := &tls.Config{RootCAs: b.RootCAs, MinVersion: tls.VersionTLS12}
	auth := http.Header{"X-API-Key": {b.APIKey}}

	// Health is an authenticated request on the trade path, not a status page.
	probe, err := rest.Probe(rest.ProbeOptions{Path: "/v1/account", Header: auth, TLSConfig: tlsCfg})
	if err != nil {
		return err
	}
	fixRec, err := fix.NewReconciler(fix.ReconcileOptions{})
	if err != nil {
		return err
	}
	// REST reconcile: look each order up by client order ID through the new path.
	restRec, err := rest.NewReconciler(rest.ReconcileOptions{
		URL:    "https://broker/v1/orders/" + rest.OrderIDPlaceholder,
		Header: auth,
	})
	if err != nil {
		return err
	}

	cfg := pathdialer.DefaultConfig()
	for i, r := range b.Regions {
		cfg.Endpoints = append(cfg.Endpoints, pathdialer.Endpoint{Name: r.Name, Region: r.Name, Priority: i,
			Primary: i == 0, Services: map[string]string{"rest": r.REST, "ws": r.WS, "fix": r.FIX}})
	}
	cfg.Probe = probe
	cfg.Fencer = pathdialer.LocalFenceOnly // this process is the only one trading the account
	// Each service is released as soon as its own reconcile succeeds.
	cfg.Reconcilers = map[string]pathdialer.ReconcileFunc{"rest": restRec.Reconcile, "fix": fixRec.Reconcile}
	path, err := pathdialer.New(cfg)
	if err != nil {
		return err
	}
	defer path.Close()
	rt, err := rest.NewTransport(path, rest.Options{TLSConfig: tlsCfg, Hosts: []string{"broker"}})
	if err != nil {
		return err
	}
	restRec.Bind(rt)
	client := &http.Client{Transport: rt}
	if err := path.Start(ctx); err != nil {
		return err
	}

	// Market data: every tick once and in order, across reconnects and switches.
	ticks := make(chan ws.Message, 1)
	sc := ws.DefaultStreamConfig()
	sc.Streams = []string{b.Stream}
	sc.Handler = func(m ws.Message) {
		select {
		case ticks <- m:
		default: // a real handler keeps up; this one only wants the first
		}
	}
	sc.Dialer = &websocket.Dialer{TLSClientConfig: tlsCfg}
	sc.Header = auth
	stream, err := ws.NewStream(path, sc)
	if err != nil {
		return err
	}
	if err := stream.Start(ctx); err != nil {
		return err
	}
	defer stream.Close()

	// REST: your own http.Client; the host is rewritten to the active region.
	// An order waits while a switch is held, fails at once when trading is
	// halted, and is never resent.
	order := `{"client_order_id":"quickstart-rest-1","symbol":"EURUSD","side":"buy","qty":"1","type":"market"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://broker/v1/orders", strings.NewReader(order))
	if err != nil {
		return err
	}
	req.Header = auth.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	switch v := rest.Outcome(resp, err); {
	case v.Kind == rest.Unknown:
		// It may have reached the broker (a 5xx, or no answer): the Path
		// reconciles it. Never resend it under a new client order ID.
		if resp != nil {
			resp.Body.Close()
		}
		fmt.Fprintf(out, "REST order quickstart-rest-1: outcome unknown, handed to reconciliation (%s)\n", v.Reason)
	case err != nil:
		return err
	default:
		var booked struct{ Status, Region string }
		err := json.NewDecoder(resp.Body).Decode(&booked)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("REST order: HTTP %d: %v", resp.StatusCode, err)
		}
		fmt.Fprintf(out, "REST order quickstart-rest-1: %s in %s\n", booked.Status, booked.Region)
	}

	// FIX: quickfix's own settings, minus the address: the Path supplies it.
	settings := quickfix.NewSettings()
	s := quickfix.NewSessionSettings()
	s.Set(config.BeginString, b.FIX.BeginString)
	s.Set(config.SenderCompID, b.FIX.SenderCompID)
	s.Set(config.TargetCompID, b.FIX.TargetCompID)
	s.Set(config.HeartBtInt, "30")
	sid, err := settings.AddSession(s)
	if err != nil {
		return err
	}
	app := execReports(make(chan string, 8))
	in, err := fix.NewInitiator(app, quickfix.NewMemoryStoreFactory(), settings, quickfix.NewNullLogFactory(), path,
		fix.Options{Sequence: fix.SequenceContinue, Reconciler: fixRec}) // the broker shares one session across regions
	if err != nil {
		return err
	}
	defer in.Close()
	if err := in.WaitLoggedOn(ctx, sid, ""); err != nil {
		return err
	}
	nos := quickfix.NewMessage()
	nos.Header.SetString(tag.MsgType, "D")
	nos.Body.SetString(tag.ClOrdID, "quickstart-fix-1")
	nos.Body.SetString(tag.Symbol, "EURUSD")
	nos.Body.SetString(tag.Side, "1")    // buy
	nos.Body.SetString(tag.OrdType, "1") // market
	nos.Body.SetString(tag.OrderQty, "1")
	nos.Body.SetString(tag.HandlInst, "1")
	if err := in.SendOrder(ctx, nos, sid); err != nil {
		return err // pathdialer.ErrTradingHalted, fix.ErrNotSent, ...
	}
	for status := ""; status != "2"; { // 2: filled
		select {
		case status = <-app:
			if status == "8" {
				return errors.New("FIX order quickstart-fix-1 rejected")
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Fprintln(out, "FIX order quickstart-fix-1: filled")

	for { // the first message is the stream's snapshot; then ticks
		select {
		case m := <-ticks:
			var tick struct{ Price string }
			if err := json.Unmarshal(m.Data, &tick); err != nil {
				return err
			}
			if !m.Snapshot {
				fmt.Fprintf(out, "%s %s (tick #%d from %s)\n", m.Stream, tick.Price, m.Seq, m.Endpoint)
				active, _ := path.Active()
				fmt.Fprintf(out, "trading through %s\n", active.Name)
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// execReports is the quickfix Application: it passes on each execution
// report's OrdStatus.
type execReports chan string

func (execReports) OnCreate(quickfix.SessionID)                       {}
func (execReports) OnLogon(quickfix.SessionID)                        {}
func (execReports) OnLogout(quickfix.SessionID)                       {}
func (execReports) ToAdmin(*quickfix.Message, quickfix.SessionID)     {}
func (execReports) ToApp(*quickfix.Message, quickfix.SessionID) error { return nil }
func (execReports) FromAdmin(*quickfix.Message, quickfix.SessionID) quickfix.MessageRejectError {
	return nil
}
func (c execReports) FromApp(msg *quickfix.Message, _ quickfix.SessionID) quickfix.MessageRejectError {
	if mt, _ := msg.MsgType(); mt == "8" {
		status, _ := msg.Body.GetString(tag.OrdStatus)
		select {
		case c <- status:
		default:
		}
	}
	return nil
}
