package rest_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/transports/rest"
)

// DefaultOrderID finds the ID wherever the common broker shapes put it, and
// leaves the body exactly as the caller made it.
func TestDefaultOrderIDFindsTheIDAndLeavesTheBody(t *testing.T) {
	type tc struct {
		name   string
		method string
		url    string
		ctype  string
		header string
		body   func() io.Reader
		want   string
	}
	js := `{"symbol":"EURUSD","client_order_id":"j-1","qty":1}`
	partly := strings.NewReader(`xx{"clientOrderId":"j-2"}`)
	_, _ = partly.Read(make([]byte, 2)) // the caller already consumed 2 bytes
	big := `{"pad":"` + strings.Repeat("x", 5000) + `","newClientOrderId":"j-3"}`
	for _, c := range []tc{
		{"strings.Reader", "POST", "/v1/orders", "application/json", "", func() io.Reader { return strings.NewReader(js) }, "j-1"},
		{"bytes.Reader", "POST", "/v1/orders", "application/json", "", func() io.Reader { return bytes.NewReader([]byte(js)) }, "j-1"},
		{"bytes.Buffer", "POST", "/v1/orders", "", "", func() io.Reader { return bytes.NewBufferString(js) }, "j-1"},
		{"reader past its start", "POST", "/v1/orders", "", "", func() io.Reader { return partly }, "j-2"},
		{"large body", "POST", "/v1/orders", "", "", func() io.Reader { return strings.NewReader(big) }, "j-3"},
		{"opaque reader", "POST", "/v1/orders", "", "", func() io.Reader { return &opaqueReader{strings.NewReader(js)} }, "j-1"},
		{"escaped ID decoded", "POST", "/v1/orders", "", "", func() io.Reader { return strings.NewReader(`{"client_order_id":"a\u0062"}`) }, "ab"},
		{"header", "POST", "/v1/orders", "application/json", "h-1", func() io.Reader { return strings.NewReader(js) }, "h-1"},
		{"form body", "POST", "/api/v3/order", "Application/X-WWW-Form-Urlencoded; charset=utf-8", "", func() io.Reader { return strings.NewReader("symbol=BTCUSDT&newClientOrderId=f-1") }, "f-1"},
		{"query", "POST", "/api/v3/order?symbol=BTCUSDT&newClientOrderId=q-1", "", "", nil, "q-1"},
		{"delete path", "DELETE", "/v1/orders/d-1", "", "", nil, "d-1"},
		{"none", "POST", "/v1/orders", "application/json", "", func() io.Reader { return strings.NewReader(`{"qty":1}`) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != nil {
				body = c.body()
			}
			req, err := http.NewRequest(c.method, "https://broker.invalid"+c.url, body)
			if err != nil {
				t.Fatal(err)
			}
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.header != "" {
				req.Header["X-Client-Order-Id"] = []string{c.header}
			}
			var want []byte
			if req.GetBody != nil {
				rc, _ := req.GetBody()
				want, _ = io.ReadAll(rc)
			}
			got, err := rest.DefaultOrderID(req)
			if err != nil || got != c.want {
				t.Fatalf("DefaultOrderID = %q, %v; want %q", got, err, c.want)
			}
			if req.Body != nil && want != nil {
				rest, _ := io.ReadAll(req.Body)
				if !bytes.Equal(rest, want) {
					t.Fatalf("body after extraction = %q, want %q", rest, want)
				}
			}
		})
	}
}
