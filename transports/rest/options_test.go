package rest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// Each order carries the fencing token of the ticket it was granted under, in
// the header the user named; reads carry none, and the caller's request is not
// modified.
func TestTokenHeaderCarriesTheTicketsGeneration(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // region+method → tokens
	record := func(region string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[region+" "+r.Method] = append(seen[region+" "+r.Method], r.Header.Get("X-Fencing-Token"))
			mu.Unlock()
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusCreated)
		}
	}
	eu := newServer(t, "eu", true, record("eu"))
	us := newServer(t, "us", false, record("us"))
	h := newHarness(t, eu.URL, us.URL, nil)
	c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), TokenHeader: "x-fencing-token"})

	send := func(id string) *http.Request {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "https://broker.invalid/v1/orders", strings.NewReader(`{"client_order_id":"`+id+`"}`))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return req
	}
	_, gen0 := h.path.Active()
	req := send("t-1")
	if req.Header.Get("X-Fencing-Token") != "" {
		t.Fatal("the caller's request was modified")
	}
	resp, err := c.Get("https://broker.invalid/v1/account")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	h.down["eu"].Store(true)
	h.waitEvent(t, pathdialer.EventRelease)
	_, gen1 := h.path.Active()
	send("t-2")

	mu.Lock()
	defer mu.Unlock()
	if got := seen["eu POST"]; len(got) != 1 || got[0] != strconv.FormatUint(gen0, 10) {
		t.Fatalf("order on eu carried tokens %q, want [%d]", got, gen0)
	}
	if got := seen["eu GET"]; len(got) != 1 || got[0] != "" {
		t.Fatalf("read carried tokens %q, want none", got)
	}
	if got := seen["us POST"]; gen1 <= gen0 || len(got) != 1 || got[0] != strconv.FormatUint(gen1, 10) {
		t.Fatalf("order on us carried tokens %q, want [%d] (after %d)", got, gen1, gen0)
	}
}

func TestTokenHeaderMustBeAHeaderName(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	_, err := rest.NewTransport(h.path, rest.Options{TokenHeader: "X Fencing: Token"})
	if !errors.Is(err, rest.ErrInvalidOptions) || !strings.Contains(err.Error(), "TokenHeader") {
		t.Fatalf("err = %v", err)
	}
}

// selfSigned returns a certificate (its own root) valid only for host.
func selfSigned(t *testing.T, host string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: host},
		DNSNames:              []string{host},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// An endpoint dialled by IP address is verified against the broker's host name
// when the user sets TLSConfig.ServerName; a wrong name still fails.
func TestUserServerNameIsKept(t *testing.T) {
	cert, pool := selfSigned(t, "api.broker.test")
	mk := func(h2 bool) *httptest.Server {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
		}))
		s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.EnableHTTP2 = h2
		s.StartTLS()
		t.Cleanup(s.Close)
		return s
	}
	eu, us := mk(true), mk(false)
	h := newHarness(t, eu.URL, us.URL, nil) // https://127.0.0.1:port
	for _, c := range []struct {
		name string
		ok   bool
	}{{"api.broker.test", true}, {"other.broker.test", false}} {
		rt, err := rest.NewTransport(h.path, rest.Options{TLSConfig: &tls.Config{RootCAs: pool, ServerName: c.name}, Hosts: []string{"broker.invalid"}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: rt}).Get("https://broker.invalid/v1/account")
		if resp != nil {
			resp.Body.Close()
		}
		rt.CloseIdleConnections()
		if c.ok && (err != nil || resp.StatusCode != http.StatusOK) {
			t.Fatalf("ServerName %q: %v", c.name, err)
		}
		var hn x509.HostnameError
		if !c.ok && !errors.As(err, &hn) {
			t.Fatalf("ServerName %q: err = %v, want a host name verification error", c.name, err)
		}
	}
}

func TestDisableHTTP2SpeaksHTTP1ToAnHTTP2Server(t *testing.T) {
	eu := newServer(t, "eu", true, nil)
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)
	for _, off := range []bool{false, true} {
		c, _ := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us), DisableHTTP2: off})
		resp, err := c.Get("https://broker.invalid/v1/account")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := map[bool]string{false: "HTTP/2.0", true: "HTTP/1.1"}[off]
		if resp.Proto != want {
			t.Fatalf("DisableHTTP2=%v: %s, want %s", off, resp.Proto, want)
		}
	}
}
