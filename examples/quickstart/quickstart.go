// Command quickstart places one order over REST and one over FIX and reads
// one price over WebSocket, all through the path brokerpath chooses.
//
// It takes the broker from flags, each defaulting to an environment variable.
// To try it, run the simulated broker in a clone of brokerpath,
//
//	go run ./cmd/simbroker
//
// paste the export lines it prints into this program's shell, and
//
//	go run .
package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"
	"github.com/quickfixgo/quickfix/store/file"
	"github.com/quickfixgo/tag"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/transports/ws"
)

func main() {
	b, err := brokerFromFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, b, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// Region is one path to the broker account: its REST base URL, its
// WebSocket URL and its FIX host:port.
type Region struct {
	Name, REST, WS, FIX string
}

// Broker is what the broker gives you: the regions (primary first), the CA
// its certificates chain to (nil: the system's roots), an API key, your FIX
// session, where FIX keeps its sequence numbers, and a market data stream.
type Broker struct {
	Regions  []Region
	RootCAs  *x509.CertPool
	APIKey   string
	FIX      quickfix.SessionID
	FIXStore string
	Stream   string
}

// brokerFromFlags reads the Broker from flags and the environment. The API
// key is read only from the environment: a flag would show in ps.
func brokerFromFlags(args []string) (Broker, error) {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	regions := fs.String("regions", os.Getenv("BROKER_REGIONS"),
		"the broker's regions, primary first, space-separated, each `name=REST-URL,WS-URL,FIX-host:port` ($BROKER_REGIONS)")
	caFile := fs.String("ca", os.Getenv("BROKER_CA_FILE"), "PEM file of the CA the broker's certificates chain to; empty: the system's roots ($BROKER_CA_FILE)")
	b := Broker{APIKey: os.Getenv("BROKER_API_KEY"), FIX: quickfix.SessionID{BeginString: quickfix.BeginStringFIX44}}
	fs.StringVar(&b.FIX.SenderCompID, "fix-sender", os.Getenv("BROKER_FIX_SENDER"), "your FIX SenderCompID ($BROKER_FIX_SENDER)")
	fs.StringVar(&b.FIX.TargetCompID, "fix-target", os.Getenv("BROKER_FIX_TARGET"), "the broker's FIX TargetCompID ($BROKER_FIX_TARGET)")
	fs.StringVar(&b.FIXStore, "fix-store", "fixstore", "directory where FIX keeps sequence numbers between runs")
	fs.StringVar(&b.Stream, "stream", "px.EURUSD", "market data stream to read")
	if err := fs.Parse(args); err != nil {
		return Broker{}, err
	}
	const hint = " (for the simulated broker: run `go run ./cmd/simbroker` in a clone of brokerpath and paste the export lines it prints)"
	if strings.TrimSpace(*regions) == "" {
		return Broker{}, errors.New("no broker regions: set BROKER_REGIONS or -regions" + hint)
	}
	for _, r := range strings.Fields(*regions) {
		name, addrs, _ := strings.Cut(r, "=")
		a := strings.Split(addrs, ",")
		if name == "" || len(a) != 3 {
			return Broker{}, fmt.Errorf("region %q: want name=REST-URL,WS-URL,FIX-host:port", r)
		}
		b.Regions = append(b.Regions, Region{Name: name, REST: a[0], WS: a[1], FIX: a[2]})
	}
	switch {
	case b.APIKey == "":
		return Broker{}, errors.New("no API key: set BROKER_API_KEY" + hint)
	case b.FIX.SenderCompID == "" || b.FIX.TargetCompID == "":
		return Broker{}, errors.New("no FIX session: set BROKER_FIX_SENDER and BROKER_FIX_TARGET (or -fix-sender, -fix-target)" + hint)
	}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return Broker{}, fmt.Errorf("CA file: %w", err)
		}
		b.RootCAs = x509.NewCertPool()
		if !b.RootCAs.AppendCertsFromPEM(pem) {
			return Broker{}, fmt.Errorf("CA file %s holds no PEM certificate", *caFile)
		}
	}
	return b, nil
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

	cfg := pathdialer.DefaultConfig() // timing and safety defaults: set only the "Start here" fields
	for i, r := range b.Regions {
		cfg.Endpoints = append(cfg.Endpoints, pathdialer.Endpoint{Name: r.Name, Region: r.Name, Priority: i,
			Primary: i == 0, Services: map[string]string{"rest": r.REST, "ws": r.WS, "fix": r.FIX}})
	}
	cfg.Probe = probe
	cfg.Fencer = pathdialer.LocalFenceOnly // this process is the only one trading the account
	// Each service is released as soon as its own reconcile succeeds.
	cfg.ReconcileByService = map[string]pathdialer.ReconcileFunc{"rest": restRec.Reconcile, "fix": fixRec.Reconcile}
	path, err := pathdialer.New(cfg)
	if err != nil {
		return err
	}
	defer path.Close()
	rt, err := rest.NewTransport(path, rest.Options{TLSConfig: tlsCfg, Hosts: []string{"broker"}})
	if err != nil {
		return err
	}
	restRec.SendLookupsVia(rt)
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

	// REST: your own http.Client; the host "broker" is sent to the active
	// region. An order waits while a switch is held, fails at once when
	// trading is halted, and is never resent. Each order has a client order
	// ID of its own: the broker books an ID once.
	id := "qs-" + strings.ToLower(rand.Text()[:10])
	order := `{"client_order_id":"` + id + `-rest","symbol":"EURUSD","side":"buy","qty":"1","type":"market"}`
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
		fmt.Fprintf(out, "REST order %s-rest: outcome unknown, handed to reconciliation (%s)\n", id, v.Reason)
	case err != nil:
		return fmt.Errorf("REST order %s-rest not sent: %w", id, err)
	default:
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("REST order %s-rest: reading the broker's answer (HTTP %d): %w", id, resp.StatusCode, err)
		}
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("REST order %s-rest: the broker answered %s, not 201 Created: %s", id, resp.Status, body)
		}
		var booked struct{ Status, Region string }
		if err := json.Unmarshal(body, &booked); err != nil {
			return fmt.Errorf("REST order %s-rest: the broker's answer is not the order: %w: %s", id, err, body)
		}
		fmt.Fprintf(out, "REST order %s-rest: %s in %s\n", id, booked.Status, booked.Region)
	}

	// FIX: quickfix's own settings, minus the address: the Path supplies it.
	// The file store keeps sequence numbers across runs, as the broker does.
	settings := quickfix.NewSettings()
	s := quickfix.NewSessionSettings()
	s.Set(config.BeginString, b.FIX.BeginString)
	s.Set(config.SenderCompID, b.FIX.SenderCompID)
	s.Set(config.TargetCompID, b.FIX.TargetCompID)
	s.Set(config.HeartBtInt, "30")
	s.Set(config.FileStorePath, b.FIXStore)
	sid, err := settings.AddSession(s)
	if err != nil {
		return err
	}
	app := execReports(make(chan execReport, 8))
	in, err := fix.NewInitiator(app, file.NewStoreFactory(settings), settings, quickfix.NewNullLogFactory(), path,
		fix.Options{Sequence: fix.SequenceContinue, Reconciler: fixRec}) // the broker shares one session across regions
	if err != nil {
		return err
	}
	defer in.Close()
	if err := in.WaitLoggedOn(ctx, sid, ""); err != nil {
		return fmt.Errorf("FIX session %v did not log on: %w", sid, err)
	}
	nos := quickfix.NewMessage()
	nos.Header.SetString(tag.MsgType, "D")
	nos.Body.SetString(tag.ClOrdID, id+"-fix")
	nos.Body.SetString(tag.Symbol, "EURUSD")
	nos.Body.SetString(tag.Side, "1")    // buy
	nos.Body.SetString(tag.OrdType, "1") // market
	nos.Body.SetString(tag.OrderQty, "1")
	nos.Body.SetString(tag.HandlInst, "1")
	if err := in.SendOrder(ctx, nos, sid); err != nil {
		return fmt.Errorf("FIX order %s-fix: %w", id, err) // pathdialer.ErrTradingHalted, fix.ErrNotSent, ...
	}
	for filled := false; !filled; {
		select {
		case er := <-app:
			if er.ClOrdID != id+"-fix" {
				continue
			}
			if er.Status == "8" { // rejected
				return fmt.Errorf("FIX order %s-fix: rejected by the broker", id)
			}
			filled = er.Status == "2"
		case <-ctx.Done():
			return fmt.Errorf("FIX order %s-fix: no fill: %w", id, ctx.Err())
		}
	}
	fmt.Fprintf(out, "FIX order %s-fix: filled\n", id)

	for { // the first message is the stream's snapshot; then ticks
		select {
		case m := <-ticks:
			var tick struct{ Price string }
			if err := json.Unmarshal(m.Data, &tick); err != nil {
				return fmt.Errorf("stream %s: %w", m.Stream, err)
			}
			if !m.Snapshot {
				fmt.Fprintf(out, "%s %s (tick #%d from %s)\n", m.Stream, tick.Price, m.Seq, m.Endpoint)
				active, _ := path.Active()
				fmt.Fprintf(out, "trading through %s\n", active.Name)
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("stream %s: no tick: %w", b.Stream, ctx.Err())
		}
	}
}

// execReports is the quickfix Application: it passes on each execution
// report's ClOrdID and OrdStatus.
type execReports chan execReport

type execReport struct{ ClOrdID, Status string }

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
		id, _ := msg.Body.GetString(tag.ClOrdID)
		status, _ := msg.Body.GetString(tag.OrdStatus)
		select {
		case c <- execReport{id, status}:
		default:
		}
	}
	return nil
}
