// Command binance trades through github.com/adshao/go-binance/v2 with
// brokerpath under it: the SDK's own http.Client gets a rest.Transport, and
// every order, cancel and replace the SDK sends goes over the path
// brokerpath chooses between two network paths to Binance.
//
// Set BINANCE_API_KEY and BINANCE_SECRET_KEY and name the two paths to the
// API (for example a direct route and one through a second region's
// gateway, each an https base URL that answers as api.binance.com):
//
//	go run . -regions "direct=https://10.0.1.10 gw=https://10.0.2.10" -symbol BTCUSDT
//
// What the SDK cannot route through the transport: its market-data and
// user-data streams dial with their own gorilla/websocket Dialer
// (websocket.go), and its WebSocket order API (order_service_ws_create.go)
// would bypass the gate. Read streams with brokerpath's ws package and send
// orders over REST.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	binance "github.com/adshao/go-binance/v2"
	"github.com/adshao/go-binance/v2/common"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/venue"
)

func main() {
	cfg, err := configFromFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "binance:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg.Out = os.Stdout
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "binance:", err)
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
	fs := flag.NewFlagSet("binance", flag.ContinueOnError)
	regions := fs.String("regions", os.Getenv("BINANCE_REGIONS"), "the paths to the API, primary first, space-separated `name=https-URL` ($BINANCE_REGIONS)")
	symbol := fs.String("symbol", "BTCUSDT", "symbol to trade")
	caFile := fs.String("ca", "", "PEM file of the CA the gateways' certificates chain to; empty: the system's roots")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	cfg := Config{Key: os.Getenv("BINANCE_API_KEY"), Secret: os.Getenv("BINANCE_SECRET_KEY"), Symbol: *symbol}
	for _, r := range strings.Fields(*regions) {
		name, u, ok := strings.Cut(r, "=")
		if !ok || name == "" || !strings.HasPrefix(u, "https://") {
			return Config{}, fmt.Errorf("region %q: want name=https-URL", r)
		}
		cfg.Regions = append(cfg.Regions, Region{name, u})
	}
	switch {
	case len(cfg.Regions) < 2:
		return Config{}, errors.New("name two paths to the API in -regions (or BINANCE_REGIONS)")
	case cfg.Key == "" || cfg.Secret == "":
		return Config{}, errors.New("set BINANCE_API_KEY and BINANCE_SECRET_KEY")
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

// sign adds timestamp and signature to a request brokerpath makes itself
// (probes, order lookups), as Binance's SIGNED endpoints require
// (https://developers.binance.com/docs/binance-spot-api-docs/rest-api/request-security):
// HMAC-SHA256 of the query string, hex.
func sign(key, secret string) func(*http.Request) {
	return func(req *http.Request) {
		q := req.URL.RawQuery
		if q != "" {
			q += "&"
		}
		q += "timestamp=" + strconv.FormatInt(time.Now().UnixMilli(), 10)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(q))
		req.URL.RawQuery = q + "&signature=" + hex.EncodeToString(mac.Sum(nil))
		req.Header.Set("X-MBX-APIKEY", key)
	}
}

// Trader is the SDK client with brokerpath under it.
type Trader struct {
	Client    *binance.Client
	Path      *pathdialer.Path
	Transport *rest.Transport
	// Orders receives every order request's outcome (rest.Options.OnOrder):
	// the verdict survives whatever the SDK makes of the answer.
	Orders chan rest.OrderEvent
}

// Connect builds the Path, the Transport and the SDK client, and starts the
// Path. Close the Trader's Path when done.
func Connect(ctx context.Context, cfg Config) (*Trader, error) {
	tlsCfg := &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	signer := sign(cfg.Key, cfg.Secret)
	// Health is a signed account read on the trade path, not /api/v3/ping.
	probe, err := rest.Probe(rest.ProbeOptions{Path: "/api/v3/account", TLSConfig: tlsCfg,
		Sign: func(r *http.Request) error { signer(r); return nil }})
	if err != nil {
		return nil, err
	}
	// An order of unknown outcome is looked up by the ID it is tracked under:
	// newClientOrderId, or for a cancel by orderId the venue's ID.
	lookup := rest.BinanceSpotOrderLookup(binance.BaseAPIMainURL, cfg.Symbol)
	lookup.Sign = func(r *http.Request, _ pathdialer.TicketInfo) error { signer(r); return nil }
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
	pc.Venue = venue.BinanceSpot()
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
		Hosts:     []string{strings.TrimPrefix(binance.BaseAPIMainURL, "https://")}, // the SDK's own base URL
		Rules:     rest.BinanceSpotRules(),
		// The SDK reads a 5xx body into *common.APIError{Code: 0}: with
		// UnknownAsError the unknown outcome comes back as an error it
		// returns unchanged (errors.As *rest.UnknownOutcomeError).
		UnknownAsError:        true,
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
	tr.Client = binance.NewClient(cfg.Key, cfg.Secret)
	tr.Client.HTTPClient = &http.Client{Transport: tr.Transport} // the one line
	if err := path.Start(ctx); err != nil {
		_ = path.Close()
		return nil, err
	}
	return tr, nil
}

// describe says what became of an SDK call, from its error.
func describe(err error) string {
	var uo *rest.UnknownOutcomeError
	var api *common.APIError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &uo):
		return fmt.Sprintf("outcome unknown, order %q handed to reconciliation (never resend it under a new ID)", uo.OrderID)
	case errors.As(err, &api):
		return fmt.Sprintf("refused by Binance: code %d, %s", api.Code, api.Message)
	case errors.Is(err, rest.ErrNotSent), errors.Is(err, pathdialer.ErrTradingHalted):
		return "not sent (safe to send again under the same ID): " + err.Error()
	}
	return "failed: " + err.Error()
}

// run places a limit order, reads it back, replaces it, and cancels the
// replacement.
func run(ctx context.Context, cfg Config) error {
	tr, err := Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer tr.Path.Close()
	c := tr.Client
	acct, err := c.NewGetAccountService().Do(ctx)
	if err != nil {
		return fmt.Errorf("account: %s", describe(err))
	}
	fmt.Fprintf(cfg.Out, "account: canTrade=%v\n", acct.CanTrade)
	o, err := c.NewCreateOrderService().Symbol(cfg.Symbol).Side(binance.SideTypeBuy).Type(binance.OrderTypeLimit).
		TimeInForce(binance.TimeInForceTypeGTC).Quantity("0.001").Price("10000").Do(ctx)
	if err != nil {
		return fmt.Errorf("order: %s", describe(err))
	}
	fmt.Fprintf(cfg.Out, "order %s: %s\n", o.ClientOrderID, o.Status)
	got, err := c.NewGetOrderService().Symbol(cfg.Symbol).OrigClientOrderID(o.ClientOrderID).Do(ctx)
	if err != nil {
		return fmt.Errorf("query: %s", describe(err))
	}
	fmt.Fprintf(cfg.Out, "query %s: %s\n", got.ClientOrderID, got.Status)
	rep, err := c.NewCancelReplaceOrderService().Symbol(cfg.Symbol).Side(binance.SideTypeBuy).Type(binance.OrderTypeLimit).
		CancelReplaceMode(binance.CancelReplaceModeStopOnFailure).TimeInForce(binance.TimeInForceTypeGTC).
		Quantity("0.001").Price("10001").CancelOrigClientOrderID(o.ClientOrderID).Do(ctx)
	if err != nil {
		return fmt.Errorf("replace: %s", describe(err))
	}
	fmt.Fprintf(cfg.Out, "replaced by %s: %s\n", rep.NewOrderResponse.ClientOrderID, rep.NewOrderResponse.Status)
	cx, err := c.NewCancelOrderService().Symbol(cfg.Symbol).OrigClientOrderID(rep.NewOrderResponse.ClientOrderID).Do(ctx)
	if err != nil {
		return fmt.Errorf("cancel: %s", describe(err))
	}
	fmt.Fprintf(cfg.Out, "cancel %s: %s\n", cx.OrigClientOrderID, cx.Status)
	active, _ := tr.Path.Active()
	fmt.Fprintf(cfg.Out, "trading through %s\n", active.Name)
	return nil
}
