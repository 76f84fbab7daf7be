package status_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/observe/status"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// The status page and its JSON show the fence mode in force and the resting
// orders switches cancelled.
func TestStatusShowsFenceMode(t *testing.T) {
	cfg := pathdialer.DefaultConfig()
	cfg.Endpoints = []pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west-1", Primary: true, Services: map[string]string{"rest": "https://api-eu.broker.example"}},
		{Name: "us", Region: "us-east-1", Priority: 10, Services: map[string]string{"rest": "https://api-us.broker.example"}},
	}
	cfg.Probe = func(context.Context, pathdialer.Endpoint) error { return errors.New("not probed in this test") }
	cfg.Fencer = pathdialer.LocalFenceOnly
	cfg.Reconcile = pathdialer.NoReconcile
	cfg.Venue = venue.Deribit()
	cfg.Quarantine = time.Hour
	p, err := pathdialer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := status.Handler(p, status.Options{Title: "acct"})
	body := get(t, h, "/", "").Body.String()
	if !strings.Contains(body, `fence mode: <span class="mono">preserve (venue default): none</span>`) || !strings.Contains(body, "resting orders cancelled by switches: 0") {
		t.Fatalf("page does not show the fence mode and the cancelled count:\n%s", body)
	}
	var js map[string]any
	if err := json.Unmarshal(get(t, h, "/", "application/json").Body.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if js["fence_mode"] != "preserve (venue default): none" || js["resting_cancelled"] != float64(0) {
		t.Fatalf("JSON fence_mode %v, resting_cancelled %v", js["fence_mode"], js["resting_cancelled"])
	}
}
