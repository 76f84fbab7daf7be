package rest_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/transports/rest"
)

func TestRedactionOfEveryCredentialForm(t *testing.T) {
	secrets := []string{"hunter2", "K3Y", "T0K", "S1G", "PW", "SESS"}
	u, _ := url.Parse("https://alice:hunter2@api.broker.example/v3/order?symbol=BTC&apiKey=K3Y&token=T0K&signature=S1G&password=PW&session_id=SESS&qty=1")
	got := rest.RedactURL(u)
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("RedactURL leaks %q: %s", s, got)
		}
	}
	for _, keep := range []string{"symbol=BTC", "qty=1", "api.broker.example/v3/order"} {
		if !strings.Contains(got, keep) {
			t.Errorf("RedactURL dropped %q: %s", keep, got)
		}
	}
	h := http.Header{"Authorization": {"Bearer T0K"}, "X-Api-Key": {"K3Y"}, "X-Mbx-Apikey": {"K3Y"}, "Cookie": {"SESS"}, "Content-Type": {"application/json"}}
	rh := rest.RedactHeader(h)
	for k, v := range rh {
		for _, s := range secrets {
			if strings.Contains(strings.Join(v, ","), s) {
				t.Errorf("RedactHeader leaks %s: %v", k, v)
			}
		}
	}
	if rh.Get("Content-Type") != "application/json" {
		t.Error("RedactHeader masked a harmless header")
	}
	if h.Get("Authorization") != "Bearer T0K" {
		t.Error("RedactHeader modified its input")
	}
	err := &url.Error{Op: "Post", URL: u.String(), Err: errors.New("EOF")}
	red := rest.RedactError(err)
	for _, s := range secrets {
		if strings.Contains(red.Error(), s) {
			t.Errorf("RedactError leaks %q: %v", s, red)
		}
	}
	if !strings.Contains(red.Error(), "EOF") {
		t.Errorf("RedactError lost the cause: %v", red)
	}
	var ue *url.Error
	if !errors.As(red, &ue) {
		t.Error("RedactError changed the error's type")
	}
}
