// Command alpaca trades through github.com/alpacahq/alpaca-trade-api-go/v3
// with brokerpath under it: the SDK's http.Client gets a rest.Transport,
// and every order, replace and cancel the SDK sends goes over the path
// brokerpath chooses between two network paths to Alpaca.
//
// Set APCA_API_KEY_ID and APCA_API_SECRET_KEY and name the two paths to the
// API (each an https base URL that answers as api.alpaca.markets):
//
//	go run . -regions "direct=https://10.0.1.10 gw=https://10.0.2.10" -symbol AAPL
//
// The SDK's calls take no context, and an http.Client passed to it replaces
// its own (with a 10 s Timeout). Do not set http.Client.Timeout: when it
// fires net/http turns the transport's typed errors into text, which
// errors.Is and errors.As no longer see through (rest.Outcome still reads
// "not sent" from the words). Bound the wait with
// rest.Options.GateWait (a held gate) and ResponseHeaderTimeout (the
// answer) instead, as below, and read each order's verdict from
// rest.Options.OnOrder. Set the SDK's RetryLimit to -1 (0 means its
// default, 3) so that it never resends an order answered 429 by itself: the
// verdict is Rejected, and you resend it under the same client order ID.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/alpacahq/alpaca-trade-api-go/v3/alpaca"
	"github.com/shopspring/decimal"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/venue"
)

// baseURL is the SDK's default base URL; Options.Hosts maps it to the
// active path.
const baseURL = "https://api.alpaca.markets"

func main() {
	cfg, err := configFromFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "alpaca:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg.Out = os.Stdout
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "alpaca:", err)
		os.Exit(1)
	}
}

// Region is one network path to the API: a name and an https base URL.
type Region struct{ Name, URL string }

// Config is what the program needs.
type Config struct {
	Regions     []Region // primary first
	RootCAs     *x509.CertPool
	Key, Secret string
	Symbol      string
	Out         io.Writer
	// OnEvent, optional, also receives the Path's events.
	OnEvent func(pathdialer.Event)
	// Tune, optional, adjusts the Path's configuration (tests: faster probes).
	Tune func(*pathdialer.Config)
}

func configFromFlags(args []string) (Config, error) {
	fs := flag.NewFlagSet("alpaca", flag.ContinueOnError)
	regions := fs.String("regions", os.Getenv("APCA_REGIONS"), "the paths to the API, primary first, space-separated `name=https-URL` ($APCA_REGIONS)")
	symbol := fs.String("symbol", "AAPL", "symbol to trade")
	caFile := fs.String("ca", "", "PEM file of the CA the gateways' certificates chain to; empty: the system's roots")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	cfg := Config{Key: os.Getenv("APCA_API_KEY_ID"), Secret: os.Getenv("APCA_API_SECRET_KEY"), Symbol: *symbol}
	for _, r := range strings.Fields(*regions) {
		name, u, ok := strings.Cut(r, "=")
		if !ok || name == "" || !strings.HasPrefix(u, "https://") {
			return Config{}, fmt.Errorf("region %q: want name=https-URL", r)
		}
		cfg.Regions = append(cfg.Regions, Region{name, u})
	}
	switch {
	case len(cfg.Regions) < 2:
		return Config{}, errors.New("name two paths to the API in -regions (or APCA_REGIONS)")
	case cfg.Key == "" || cfg.Secret == "":
		return Config{}, errors.New("set APCA_API_KEY_ID and APCA_API_SECRET_KEY")
	}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return Config{}, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return Config{}, fmt.Errorf("%s holds no PEM certificate", *caFile)
		}
	}
	return cfg, nil
}

// Trader is the SDK client with brokerpath under it.
type Trader struct {
	Client    *alpaca.Client
	Path      *pathdialer.Path
	Transport *rest.Transport
	// Orders receives every order request's outcome (rest.Options.OnOrder),
	// with the client order ID the transport assigned when the SDK sent none.
	Orders chan rest.OrderEvent
}

// Connect builds the Path, the Transport and the SDK client, and starts the
// Path. Close the Trader's Path when done.
func Connect(ctx context.Context, cfg Config) (*Trader, error) {
	tlsCfg := &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	auth := http.Header{"Apca-Api-Key-Id": {cfg.Key}, "Apca-Api-Secret-Key": {cfg.Secret}}
	probe, err := rest.Probe(rest.ProbeOptions{Path: "/v2/account", Header: auth, TLSConfig: tlsCfg})
	if err != nil {
		return nil, err
	}
	// Orders are looked up by client_order_id; a cancel, which names the
	// order by its UUID, by that UUID.
	lookup := rest.AlpacaOrderLookup(baseURL)
	lookup.Header = auth
	rec, err := rest.NewReconciler(lookup)
	if err != nil {
		return nil, err
	}
	pc := pathdialer.DefaultConfig()
	for i, r := range cfg.Regions {
		pc.Endpoints = append(pc.Endpoints, pathdialer.Endpoint{Name: r.Name, Region: r.Name, Priority: i, Primary: i == 0,
			Services: map[string]string{pathdialer.ServiceREST: r.URL}})
	}
	pc.Probe = probe
	pc.Fencer = pathdialer.LocalFenceOnly // this process is the only one trading the account
	pc.Reconcile = rec.Reconcile
	pc.Venue = venue.Alpaca()
	pc.OnEvent = cfg.OnEvent
	if cfg.Tune != nil {
		cfg.Tune(&pc)
	}
	path, err := pathdialer.New(pc)
	if err != nil {
		return nil, err
	}
	tr := &Trader{Path: path, Orders: make(chan rest.OrderEvent, 1024)}
	tr.Transport, err = rest.NewTransport(path, rest.Options{
		TLSConfig: tlsCfg,
		Hosts:     []string{strings.TrimPrefix(baseURL, "https://")}, // the SDK's own base URL
		Rules:     rest.AlpacaRules(),
		// The SDK turns a non-JSON 5xx body into a plain string error: with
		// UnknownAsError the unknown outcome comes back as an error it
		// returns unchanged (errors.As *rest.UnknownOutcomeError).
		UnknownAsError: true,
		// In place of http.Client.Timeout (see the package comment).
		GateWait:              20 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second,
		OnOrder: func(e rest.OrderEvent) {
			select {
			case tr.Orders <- e:
			default:
			}
		},
	})
	if err != nil {
		_ = path.Close()
		return nil, err
	}
	rec.SendLookupsVia(tr.Transport)
	tr.Client = alpaca.NewClient(alpaca.ClientOpts{APIKey: cfg.Key, APISecret: cfg.Secret, BaseURL: baseURL,
		RetryLimit: -1,                                     // no resend on 429 (0 would mean the default, 3)
		HTTPClient: &http.Client{Transport: tr.Transport}}) // the one line; no Timeout
	if err := path.Start(ctx); err != nil {
		_ = path.Close()
		return nil, err
	}
	return tr, nil
}

// describe says what became of an SDK call, from its error.
func describe(err error) string {
	var uo *rest.UnknownOutcomeError
	var api *alpaca.APIError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &uo):
		return fmt.Sprintf("outcome unknown, order %q handed to reconciliation (never resend it under a new ID)", uo.OrderID)
	case errors.As(err, &api):
		return fmt.Sprintf("refused by Alpaca: HTTP %d, code %d, %s", api.StatusCode, api.Code, api.Message)
	case errors.Is(err, rest.ErrNotSent), errors.Is(err, pathdialer.ErrTradingHalted):
		return "not sent (safe to send again under the same ID): " + err.Error()
	}
	return "failed: " + err.Error()
}

// run places a limit order without a client order ID (the transport assigns
// one), reads it back, replaces it, and cancels the replacement.
func run(ctx context.Context, cfg Config) error {
	tr, err := Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer tr.Path.Close()
	c := tr.Client
	acct, err := c.GetAccount()
	if err != nil {
		return fmt.Errorf("account: %s", describe(err))
	}
	fmt.Fprintf(cfg.Out, "account %s: %s\n", acct.ID, acct.Status)
	qty, price := decimal.NewFromInt(1), decimal.NewFromInt(100)
	o, err := c.PlaceOrder(alpaca.PlaceOrderRequest{Symbol: cfg.Symbol, Qty: &qty, Side: alpaca.Buy, Type: alpaca.Limit,
		TimeInForce: alpaca.Day, LimitPrice: &price})
	if err != nil {
		return fmt.Errorf("order: %s", describe(err))
	}
	ev := <-tr.Orders
	fmt.Fprintf(cfg.Out, "order %s (client order ID %s, assigned: %v): %s\n", o.ID, o.ClientOrderID, ev.Assigned, o.Status)
	got, err := c.GetOrderByClientOrderID(o.ClientOrderID)
	if err != nil {
		return fmt.Errorf("query: %s", describe(err))
	}
	fmt.Fprintf(cfg.Out, "query %s: %s\n", got.ClientOrderID, got.Status)
	price2 := decimal.NewFromInt(101)
	rep, err := c.ReplaceOrder(o.ID, alpaca.ReplaceOrderRequest{Qty: &qty, LimitPrice: &price2, TimeInForce: alpaca.Day})
	if err != nil {
		return fmt.Errorf("replace: %s", describe(err))
	}
	<-tr.Orders
	fmt.Fprintf(cfg.Out, "replaced by %s (client order ID %s): %s\n", rep.ID, rep.ClientOrderID, rep.Status)
	if err := c.CancelOrder(rep.ID); err != nil {
		return fmt.Errorf("cancel: %s", describe(err))
	}
	ev = <-tr.Orders
	fmt.Fprintf(cfg.Out, "cancel %s: %s\n", rep.ID, ev.Verdict.Kind)
	active, _ := tr.Path.Active()
	fmt.Fprintf(cfg.Out, "trading through %s\n", active.Name)
	return nil
}
