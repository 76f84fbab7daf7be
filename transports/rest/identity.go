package rest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// IdentityOptions configures IdentityCheck.
type IdentityOptions struct {
	// Path of the authenticated account query, e.g. "/v1/account". Required.
	Path string
	// Header carries the credentials. Never logged.
	Header http.Header
	// Sign, optional, signs each request.
	Sign func(*http.Request) error
	// TLSConfig is the base TLS configuration (InsecureSkipVerify refused).
	TLSConfig *tls.Config
	// Service is the endpoint service to query; default "rest".
	Service string
	// AccountField, EntityField and EntitlementsField name the top-level JSON
	// fields of the answer; defaults "account_id", "entity", "entitlements".
	AccountField, EntityField, EntitlementsField string
}

// IdentityCheck returns a pathdialer.IdentityFunc that asks an endpoint who it
// fronts with an authenticated account query and reads the account ID, entity and
// entitlements from the JSON answer. Compare with pathdialer.Config.ExpectedIdentity.
func IdentityCheck(opts IdentityOptions) (pathdialer.IdentityFunc, error) {
	if strings.TrimSpace(opts.Path) == "" {
		return nil, optionsError("IdentityOptions.Path", "", "IdentityOptions.Path is required (an authenticated account query)")
	}
	if opts.TLSConfig != nil && opts.TLSConfig.InsecureSkipVerify {
		return nil, optionsError("IdentityOptions.TLSConfig.InsecureSkipVerify", "", "IdentityOptions.TLSConfig.InsecureSkipVerify is refused")
	}
	if opts.Service == "" {
		opts.Service = pathdialer.ServiceREST
	}
	if opts.AccountField == "" {
		opts.AccountField = "account_id"
	}
	if opts.EntityField == "" {
		opts.EntityField = "entity"
	}
	if opts.EntitlementsField == "" {
		opts.EntitlementsField = "entitlements"
	}
	var tlsCfg *tls.Config
	if opts.TLSConfig != nil {
		tlsCfg = opts.TLSConfig.Clone()
	}
	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true, DisableKeepAlives: true, TLSHandshakeTimeout: 10 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
		addr, ok := ep.Address(opts.Service)
		if !ok {
			return pathdialer.Identity{}, fmt.Errorf("rest identity: endpoint %q has no %q address", ep.Name, opts.Service)
		}
		u, err := url.Parse(strings.TrimSuffix(addr, "/") + opts.Path)
		if err != nil {
			return pathdialer.Identity{}, fmt.Errorf("rest identity: endpoint %q: bad URL", ep.Name)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return pathdialer.Identity{}, fmt.Errorf("rest identity: endpoint %q: %w", ep.Name, RedactError(err))
		}
		for k, v := range opts.Header {
			req.Header[k] = v
		}
		if opts.Sign != nil {
			if err := opts.Sign(req); err != nil {
				return pathdialer.Identity{}, fmt.Errorf("rest identity: signing for %q: %w", ep.Name, err)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			return pathdialer.Identity{}, fmt.Errorf("rest identity: endpoint %q: %w", ep.Name, RedactError(err))
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return pathdialer.Identity{}, fmt.Errorf("rest identity: endpoint %q: reading the answer: %w", ep.Name, err)
		}
		if resp.StatusCode != http.StatusOK {
			return pathdialer.Identity{}, fmt.Errorf("rest identity: endpoint %q answered HTTP %d to GET %s", ep.Name, resp.StatusCode, redactURL(u))
		}
		id, err := decodeIdentity(opts, body)
		if err != nil {
			return pathdialer.Identity{}, fmt.Errorf("rest identity: endpoint %q: %w", ep.Name, err)
		}
		return id, nil
	}, nil
}

// decodeIdentity reads the account, entity and entitlements from an account
// query's answer; whatever the bytes, an identity with an account or an error.
func decodeIdentity(opts IdentityOptions, body []byte) (pathdialer.Identity, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return pathdialer.Identity{}, fmt.Errorf("the answer is not a JSON object: %w", err)
	}
	var id pathdialer.Identity
	str := func(field string) string {
		var s string
		if raw, ok := m[field]; ok && json.Unmarshal(raw, &s) != nil {
			s = strings.Trim(string(raw), `"`)
		}
		return s
	}
	id.Account = str(opts.AccountField)
	id.Entity = str(opts.EntityField)
	if raw, ok := m[opts.EntitlementsField]; ok {
		_ = json.Unmarshal(raw, &id.Entitlements)
	}
	if id.Account == "" {
		return pathdialer.Identity{}, fmt.Errorf("the answer has no %q", opts.AccountField)
	}
	return id, nil
}
