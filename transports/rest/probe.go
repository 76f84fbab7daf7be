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
	// Path appended to the endpoint's base URL, e.g. "/v1/account"; it must
	// begin with "/" (a query may follow). Required: choose an authenticated
	// request on the trade path, not a status page.
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
// an endpoint and treats anything but an expected status as failure: a
// *ProbeStatusError, which wraps pathdialer.ErrProbeRejected for a status that
// proves the request wrong (see ProbeStatusError). Probes do not go through the
// Path's tracked dialer: they must reach fenced endpoints too.
func Probe(opts ProbeOptions) (pathdialer.ProbeFunc, error) {
	if strings.TrimSpace(opts.Path) == "" {
		return nil, optionsError("ProbeOptions.Path", "", "ProbeOptions.Path is required (an authenticated request on the trade path)")
	}
	if !strings.HasPrefix(opts.Path, "/") {
		// Not echoed: a query in it may carry a key.
		return nil, optionsError("ProbeOptions.Path", "", "ProbeOptions.Path must begin with \"/\" (e.g. \"/v1/account\"): it is appended to the endpoint's base URL, so a path without it, or a whole URL, makes a URL that is not the one meant")
	}
	if opts.TLSConfig != nil && opts.TLSConfig.InsecureSkipVerify {
		return nil, optionsError("ProbeOptions.TLSConfig.InsecureSkipVerify", "", "ProbeOptions.TLSConfig.InsecureSkipVerify is refused")
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
			return &ProbeStatusError{Endpoint: ep.Name, Method: opts.Method, URL: probeURL(u), StatusCode: resp.StatusCode, Expect: slices.Clone(opts.Expect)}
		}
		return nil
	}, nil
}

// ProbeStatusError is Probe's error when an endpoint answered with a status
// that is not in ProbeOptions.Expect. It holds no credential: URL keeps the
// scheme, host and path only (user information and fragment are left out, a
// query shows as ?REDACTED whatever its names), and no header or body of the
// exchange is kept.
//
// A status that proves the probe's request itself wrong, whichever endpoint
// answers it, makes it a rejection (Rejected, and errors.Is(err,
// pathdialer.ErrProbeRejected)): 400 Bad Request (malformed, e.g. a
// signature's parameters missing), 401 Unauthorized (credentials refused),
// 403 Forbidden (credentials lacking a permission, or a source address not
// allowed), 404 Not Found and 410 Gone (no such path, or an API version
// retired), 405 Method Not Allowed. When every endpoint answers so, Start
// fails at once rather than waiting out Config.StartWait (one region's load
// balancer that 404s while half deployed does not: the others still answer
// well). Anything else is an unhealthy or busy endpoint, not a rejection: a
// redirect, 408, 409, 429, any 5xx. A running Path counts both alike, as
// probe failures.
type ProbeStatusError struct {
	// Endpoint is the endpoint's name.
	Endpoint string
	// Method is the probe's HTTP method.
	Method string
	// URL is the probe's URL: scheme, host and path, and ?REDACTED for a query.
	URL string
	// StatusCode is the status the endpoint answered.
	StatusCode int
	// Expect lists the statuses that would have been a success.
	Expect []int
}

func (e *ProbeStatusError) Error() string {
	verb := "answered"
	if e.Rejected() {
		verb = "rejected the request (it is wrong, not the endpoint):"
	}
	return fmt.Sprintf("rest probe: endpoint %q %s HTTP %d %s to %s %s (want %v)", e.Endpoint, verb, e.StatusCode, http.StatusText(e.StatusCode), e.Method, e.URL, e.Expect)
}

// Rejected reports whether StatusCode proves the probe's request wrong: 400,
// 401, 403, 404, 405 or 410.
func (e *ProbeStatusError) Rejected() bool {
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusGone:
		return true
	}
	return false
}

// Unwrap returns pathdialer.ErrProbeRejected when the answer is a rejection
// (Rejected), else nil.
func (e *ProbeStatusError) Unwrap() error {
	if e.Rejected() {
		return pathdialer.ErrProbeRejected
	}
	return nil
}

// probeURL renders u for a probe's error: scheme, host and path; a query
// (which may carry a key under any name) shows as ?REDACTED.
func probeURL(u *url.URL) string {
	s := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
	if u.RawQuery != "" {
		s += "?" + redacted
	}
	return s
}
