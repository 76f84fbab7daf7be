package ws

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// Dialer opens WebSocket connections over a pathdialer.Path. Every connection
// goes to one endpoint's "ws" address (the URL is rebuilt from it, so the Host
// header and the TLS server name are that endpoint's) through the Path's
// tracked dial. Dial and DialEndpoint hand out ordinary connections: the fence
// closes them and a fenced endpoint is refused with pathdialer.ErrFenced.
// DialReadOnly hands out read-only ones (market data), which the fence leaves
// open. The base dialer's TLS config, subprotocols, compression,
// buffer sizes, jar and handshake timeout are kept; its proxy and custom dial
// functions are not (the Path is the route). A failed dial or handshake is
// returned to the caller and never reported to the Path: it moves no order
// flow (see the package doc, "Evidence"). Safe for concurrent use.
type Dialer struct {
	path *pathdialer.Path
	base websocket.Dialer
}

// Conn is a WebSocket connection handed out by a Dialer, with the endpoint and
// the Path's fencing token it was dialed under: what Path.Report needs for the
// results of orders sent over it. Market data over it is not evidence for the
// Path (see the package doc, "Evidence"). Its NextReader, ReadMessage and
// ReadJSON hold every message, compressed or not, to the read limit set with
// its SetReadLimit.
type Conn struct {
	*websocket.Conn
	endpoint string
	gen      uint64
	limit    atomic.Int64          // SetReadLimit's
	readErr  atomic.Pointer[error] // set once a message passed limit
}

// Endpoint returns the name of the endpoint the connection goes to.
func (c *Conn) Endpoint() string { return c.endpoint }

// Token returns the Path's fencing token the connection was dialed under.
func (c *Conn) Token() uint64 { return c.gen }

// HandshakeError is a handshake the server answered with an HTTP status instead
// of an upgrade. RetryAfter is the server's Retry-After (seconds or HTTP date)
// when it answered 503 or 429, zero otherwise. It wraps websocket.ErrBadHandshake.
type HandshakeError struct {
	Endpoint   string
	StatusCode int
	RetryAfter time.Duration
}

// Error names the endpoint, the status and the Retry-After; never the URL.
func (e *HandshakeError) Error() string {
	s := fmt.Sprintf("ws: handshake with endpoint %q refused: HTTP %d", e.Endpoint, e.StatusCode)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	return s
}

// Unwrap returns websocket.ErrBadHandshake.
func (e *HandshakeError) Unwrap() error { return websocket.ErrBadHandshake }

// ErrAddressCredentials is wrapped by the error NewDialer and NewStream return
// when an endpoint's "ws" address carries user information
// (ws://user:password@host/ws): a WebSocket handshake cannot send it. Put
// credentials in the handshake's header instead (StreamConfig.Header, or the
// header passed to Dial).
var ErrAddressCredentials = errors.New("ws: credentials in a ws address")

// NewDialer returns a Dialer over path. base may be nil (websocket.DefaultDialer's
// settings); it is copied, later changes to it are not seen.
func NewDialer(path *pathdialer.Path, base *websocket.Dialer) (*Dialer, error) {
	if path == nil {
		return nil, errors.New("ws: NewDialer: nil path")
	}
	if base == nil {
		base = websocket.DefaultDialer
	}
	if base.TLSClientConfig != nil && base.TLSClientConfig.InsecureSkipVerify {
		return nil, errors.New("ws: NewDialer: TLSClientConfig.InsecureSkipVerify is refused")
	}
	if err := checkAddresses(path); err != nil {
		return nil, fmt.Errorf("ws: NewDialer: %w", err)
	}
	d := &Dialer{path: path, base: *base}
	d.base.Proxy = nil
	d.base.NetDial = nil
	d.base.NetDialTLSContext = nil // gorilla then sets the TLS server name from the URL host
	d.base.NetDialContext = nil
	return d, nil
}

// Dial connects to the active endpoint. If the active endpoint changes while the
// dial is in progress the new connection is closed and the error wraps
// pathdialer.ErrSwitched: dial again. The response is returned for failed
// handshakes (its body is closed) as gorilla does.
func (d *Dialer) Dial(ctx context.Context, header http.Header) (*Conn, *http.Response, error) {
	ep, gen := d.path.Active()
	c, resp, err := d.DialEndpoint(ctx, ep.Name, header)
	if err != nil {
		return nil, resp, err
	}
	if now, ngen := d.path.Active(); now.Name != ep.Name || ngen != gen {
		_ = c.Close()
		return nil, resp, fmt.Errorf("%w: ws dial on %q", pathdialer.ErrSwitched, ep.Name)
	}
	return c, resp, nil
}

// DialEndpoint connects to the named endpoint's "ws" address, whether or not it
// is active (streams may read over any healthy path). A 503 or 429 answer is a
// *HandshakeError carrying Retry-After.
func (d *Dialer) DialEndpoint(ctx context.Context, endpoint string, header http.Header) (*Conn, *http.Response, error) {
	return d.dial(ctx, endpoint, header, false)
}

// DialReadOnly connects to the named endpoint's "ws" address with a read-only
// connection (pathdialer.Path.DialReadOnly): the Path tracks it and closes it at
// Path.Close, but its fence leaves it open and does not refuse it while the
// endpoint is fenced. The caller promises never to submit an order over it; it
// is for market data, which may be read over any path, and lets a reader move
// make-before-break across a switch. Errors are as for DialEndpoint.
func (d *Dialer) DialReadOnly(ctx context.Context, endpoint string, header http.Header) (*Conn, *http.Response, error) {
	return d.dial(ctx, endpoint, header, true)
}

func (d *Dialer) dial(ctx context.Context, endpoint string, header http.Header, readOnly bool) (*Conn, *http.Response, error) {
	ep, ok := d.path.Endpoint(endpoint)
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q", pathdialer.ErrUnknownEndpoint, endpoint)
	}
	u, hostport, err := wsURL(ep)
	if err != nil {
		return nil, nil, err
	}
	var pc *pathdialer.Conn
	wd := d.base
	wd.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dial := d.path.DialEndpoint
		if readOnly {
			dial = d.path.DialReadOnly
		}
		c, err := dial(ctx, ep.Name, network, hostport)
		if err != nil {
			return nil, err
		}
		pc = c
		return c, nil
	}
	wc, resp, err := wd.DialContext(ctx, u, header)
	if err != nil {
		if pc != nil {
			_ = pc.Close()
		}
		if errors.Is(err, websocket.ErrBadHandshake) && resp != nil {
			he := &HandshakeError{Endpoint: ep.Name, StatusCode: resp.StatusCode}
			if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
				he.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			}
			return nil, resp, he
		}
		return nil, resp, sanitizeDial(ep.Name, err)
	}
	gen := uint64(0)
	if pc != nil {
		gen = pc.Token()
	}
	return &Conn{Conn: wc, endpoint: ep.Name, gen: gen}, resp, nil
}

// checkAddresses refuses a Path whose "ws" addresses cannot be dialed because
// they carry user information; the error names the endpoint, never the
// address.
func checkAddresses(path *pathdialer.Path) error {
	for _, ep := range path.Endpoints() {
		raw, ok := ep.Address(pathdialer.ServiceWS)
		if !ok {
			continue
		}
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			return credentialsError(ep.Name)
		}
	}
	return nil
}

func credentialsError(endpoint string) error {
	return fmt.Errorf("%w: endpoint %q: its %q address has user information (user:password@), which a WebSocket handshake cannot send: "+
		"remove it and put the credentials in the handshake's Header (StreamConfig.Header, or the header passed to Dial)",
		ErrAddressCredentials, endpoint, pathdialer.ServiceWS)
}

// wsURL returns the endpoint's ws URL (scheme ws or wss, as pathdialer.New
// requires; http and https are mapped all the same) and the host:port to
// dial.
func wsURL(ep pathdialer.Endpoint) (string, string, error) {
	raw, ok := ep.Address(pathdialer.ServiceWS)
	if !ok {
		return "", "", fmt.Errorf("%w: endpoint %q has no %q address", pathdialer.ErrUnknownService, ep.Name, pathdialer.ServiceWS)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("ws: endpoint %q: %q address is not a URL with a host", ep.Name, pathdialer.ServiceWS)
	}
	if u.User != nil {
		return "", "", credentialsError(ep.Name)
	}
	switch strings.ToLower(u.Scheme) {
	case "ws", "http":
		u.Scheme = "ws"
	case "wss", "https":
		u.Scheme = "wss"
	default:
		return "", "", fmt.Errorf("ws: endpoint %q: scheme %q is not ws or wss", ep.Name, u.Scheme)
	}
	hp := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "wss" {
			port = "443"
		}
		hp = net.JoinHostPort(u.Hostname(), port)
	}
	return u.String(), hp, nil
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date; anything
// else is zero.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// checkStreamAddresses refuses, for a Stream, endpoints it could never
// connect to: no "ws" address, or a wss:// address to a host no public CA
// certifies while the dialer verifies against the system's roots only.
func checkStreamAddresses(path *pathdialer.Path, d *websocket.Dialer) error {
	hasCA := d != nil && d.TLSClientConfig != nil && d.TLSClientConfig.RootCAs != nil
	for i, ep := range path.Endpoints() {
		field := fmt.Sprintf("Endpoints[%d].Services[%q]", i, pathdialer.ServiceWS)
		raw, ok := ep.Address(pathdialer.ServiceWS)
		if !ok {
			return configError(field, ep.Name, fmt.Errorf("endpoint %q has no %q address: a Stream connects only there; set Endpoint.Services[%q] on every endpoint of the Path (wss://…)",
				ep.Name, pathdialer.ServiceWS, pathdialer.ServiceWS))
		}
		u, err := url.Parse(raw)
		if err == nil && u.User != nil {
			return configError(field, ep.Name, credentialsError(ep.Name))
		}
		if err != nil || hasCA || !strings.EqualFold(u.Scheme, "wss") || !privateHost(u.Hostname()) {
			continue
		}
		return configError("Dialer.TLSClientConfig.RootCAs", ep.Name, fmt.Errorf("endpoint %q: its wss:// host is one no public CA certifies (loopback, a private address or a local name), and StreamConfig.Dialer.TLSClientConfig.RootCAs is not set: "+
			"every handshake would fail certificate verification and the stream would stay connecting; set RootCAs to the pool holding the CA that signed the server's certificate (x509.SystemCertPool() if the system trusts it)",
			ep.Name))
	}
	return nil
}

// configError is a *pathdialer.ConfigError of a StreamConfig (or of the
// Path's endpoints, as a Stream needs them).
func configError(field, endpoint string, err error) error {
	return &pathdialer.ConfigError{Kind: ErrInvalidConfig, Field: field, Endpoint: endpoint, Err: err}
}

// privateHost reports whether host is one no publicly trusted CA issues a
// certificate for: a loopback, private, link-local or unspecified address,
// localhost, a name without a dot, or a name under .localhost, .local,
// .internal or .home.arpa.
func privateHost(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if !strings.Contains(h, ".") {
		return true
	}
	for _, s := range []string{".localhost", ".local", ".internal", ".home.arpa"} {
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}
