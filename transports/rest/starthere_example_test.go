package rest_test

import (
	"crypto/tls"
	"crypto/x509"
	"log"
	"net/http"
	"strings"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// The package documentation's "Start here": the transport swapped into the
// application's own http.Client, and the order loop that never resends a
// 5xx blindly. (The package Example runs it against two regions.)
func ExampleOutcome() {
	var path *pathdialer.Path // pathdialer.New, then Start
	pool := x509.NewCertPool()

	rt, err := rest.NewTransport(path, rest.Options{
		TLSConfig: &tls.Config{RootCAs: pool},
		Hosts:     []string{"broker"}, // the name your URLs use: https://broker/v2/orders
		Rules:     rest.AlpacaRules(), // which requests are orders
	})
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: rt}

	req, _ := http.NewRequest(http.MethodPost, "https://broker/v2/orders", strings.NewReader(`{"client_order_id":"o-1"}`))
	resp, err := client.Do(req)
	v := rest.Outcome(resp, err)
	switch v.Kind {
	case rest.Accepted: // resp.Body is the broker's account of the order
	case rest.Rejected: // 4xx: refused, not booked; resp.Body says why
	case rest.Unknown: // 5xx or no answer: handed to reconciliation; do not resend
	case rest.NotSent: // nothing left the process (halted, dial failed, ...)
	}
	if resp != nil {
		resp.Body.Close()
	}
	if v.MayResend {
		log.Println("may send again, under the same client order ID:", v.Reason)
	}
}
