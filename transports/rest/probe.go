package rest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// ProbeOptions configures Probe.
type ProbeOptions struct {
	// Method of the probe request; default GET.
	Method string
	// Path appended to the endpoint's base URL, e.g. "/v1/account". Required:
	// choose an authenticated request on the trade path, not a status page.
	Path string
	// Header is sent with every probe (the credentials: X-API-Key,
	// Authorization). Never logged.
	Header http.Header
	// Sign, optional, signs each probe request (HMAC-style broker APIs).
	Sign func(*http.Request) error
	// Expect lists the statuses that count as success; default 200.
	Expect []int
	// TLSConfig is the base TLS configuration (InsecureSkipVerify refused).
	TLSConfig *tls.Config
	// Service is the endpoint service to probe; default "rest".
	Service string
	// KeepAlive reuses connections between probes. Default false: every probe
	// makes a fresh connection and TLS handshake, so it also proves that new
	// connections can be made (a blackholed path often keeps old ones).
	KeepAlive bool
}

// Probe returns a pathdialer.ProbeFunc that performs one authenticated request on
// an endpoint and treats anything but an expected status as failure. Probes do not
// go through the Path's tracked dialer: they must reach fenced endpoints too.
func Probe(opts ProbeOptions) (pathdialer.ProbeFunc, error) {
	if strings.TrimSpace(opts.Path) == "" {
		return nil, fmt.Errorf("%w: ProbeOptions.Path is required (an authenticated request on the trade path)", ErrInvalidOptions)
	}
	if opts.TLSConfig != nil && opts.TLSConfig.InsecureSkipVerify {
		return nil, fmt.Errorf("%w: ProbeOptions.TLSConfig.InsecureSkipVerify is refused", ErrInvalidOptions)
	}
	if opts.Method == "" {
		opts.Method = http.MethodGet
	}
	if len(opts.Expect) == 0 {
		opts.Expect = []int{http.StatusOK}
	}
	if opts.Service == "" {
		opts.Service = pathdialer.ServiceREST
	}
	var tlsCfg *tls.Config
	if opts.TLSConfig != nil {
		tlsCfg = opts.TLSConfig.Clone()
	}
	tr := &http.Transport{
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   true,
		DisableKeepAlives:   !opts.KeepAlive,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(ctx context.Context, ep pathdialer.Endpoint) error {
		addr, ok := ep.Address(opts.Service)
		if !ok {
			return fmt.Errorf("rest probe: endpoint %q has no %q address", ep.Name, opts.Service)
		}
		u, err := url.Parse(strings.TrimSuffix(addr, "/") + opts.Path)
		if err != nil {
			return fmt.Errorf("rest probe: endpoint %q: bad URL", ep.Name)
		}
		req, err := http.NewRequestWithContext(ctx, opts.Method, u.String(), nil)
		if err != nil {
			return fmt.Errorf("rest probe: endpoint %q: %w", ep.Name, RedactError(err))
		}
		for k, v := range opts.Header {
			req.Header[k] = v
		}
		if opts.Sign != nil {
			if err := opts.Sign(req); err != nil {
				return fmt.Errorf("rest probe: signing for %q: %w", ep.Name, err)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("rest probe: endpoint %q: %w", ep.Name, RedactError(err))
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if !slices.Contains(opts.Expect, resp.StatusCode) {
			return fmt.Errorf("rest probe: endpoint %q answered HTTP %d %s to %s %s (want %v)", ep.Name, resp.StatusCode, http.StatusText(resp.StatusCode), opts.Method, redactURL(u), opts.Expect)
		}
		return nil
	}, nil
}
