package rest_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

const signedSecret = "c2lnbmF0dXJlLXNlY3JldA"

// No error RoundTrip returns repeats the request's signed query, whichever
// path it came by; and RedactError masks what http.Client adds around it,
// keeping the application's own context and the chain for errors.Is.
func TestErrorsNeverRepeatTheSignedURL(t *testing.T) {
	signed := "https://broker.invalid/v1/orders?symbol=EURUSD&timestamp=1&signature=" + signedSecret
	var eu *server
	eu = newServer(t, "eu", true, bookThenCut(&eu))
	us := newServer(t, "us", true, nil)
	h := newHarness(t, eu.URL, us.URL, nil)

	cases := []struct {
		name string
		opts rest.Options
		want error
	}{
		// An order-ID finder of the application's that quotes the URL.
		{"order-id-finder", rest.Options{OrderID: func(r *http.Request) (string, error) {
			return "", fmt.Errorf("no order ID in %s", r.URL)
		}}, nil},
		// A transport error after the order was written (unknown outcome).
		{"unknown-outcome", rest.Options{}, pathdialer.ErrUnknownOutcome},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.TLSConfig = rootsOf(eu, us)
			_, rt := newClient(t, h, c.opts)
			req, _ := http.NewRequest(http.MethodPost, signed, strings.NewReader(`{"client_order_id":"o-sig-`+c.name+`"}`))
			_, err := rt.RoundTrip(req)
			if err == nil {
				t.Fatal("RoundTrip succeeded, want an error")
			}
			if strings.Contains(err.Error(), signedSecret) {
				t.Errorf("RoundTrip's error repeats the signature: %v", err)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("err = %v, want errors.Is %v", err, c.want)
			}
			// Through http.Client, which wraps it in a *url.Error that repeats
			// the URL as written; the application wraps it once more.
			req, _ = http.NewRequest(http.MethodPost, signed, strings.NewReader(`{"client_order_id":"o-sig2-`+c.name+`"}`))
			_, err = (&http.Client{Transport: rt}).Do(req)
			red := rest.RedactError(fmt.Errorf("placing the order: %w", err))
			if strings.Contains(red.Error(), signedSecret) {
				t.Errorf("RedactError leaves the signature: %v", red)
			}
			if !strings.HasPrefix(red.Error(), "placing the order: ") || !strings.Contains(red.Error(), "symbol=EURUSD") {
				t.Errorf("RedactError lost the message around the URL: %v", red)
			}
			if c.want != nil && !errors.Is(red, c.want) {
				t.Errorf("RedactError broke the chain: %v is not %v", red, c.want)
			}
		})
	}
}
