package rest_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/transports/rest"
)

func TestRedactionOfEveryCredentialForm(t *testing.T) {
	secrets := []string{"hunter2", "K3Y", "T0K", "S1G", "PW", "SESS"}
	u, _ := url.Parse("https://alice:hunter2@api.broker.example/v3/order?symbol=BTC&apiKey=K3Y&token=T0K&signature=S1G&password=PW&session_id=SESS&qty=1")
	err := &url.Error{Op: "Post", URL: u.String(), Err: errors.New("EOF")}
	red := rest.RedactError(err)
	for _, s := range secrets {
		if strings.Contains(red.Error(), s) {
			t.Errorf("RedactError leaks %q: %v", s, red)
		}
	}
	for _, keep := range []string{"symbol=BTC", "qty=1", "api.broker.example/v3/order"} {
		if !strings.Contains(red.Error(), keep) {
			t.Errorf("RedactError dropped %q: %v", keep, red)
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
