package status_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/observe/status"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// A broker whose order-status lookup and probe answers carry 1 MiB of text
// (with a line break and markup) cannot inflate the status page: the JSON
// and the HTML stay within 64 KiB, and the text is cut with a length note.
func TestCounterpartyTextIsBoundedOnTheStatusPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		huge := strings.Repeat("S", 1<<20) + "\n<b>ACCEPTED</b>"
		var down atomic.Bool
		var fails atomic.Int32
		fails.Store(2)
		rec := status.NewRecorder()
		cfg := pathdialer.DefaultConfig()
		cfg.Endpoints = []pathdialer.Endpoint{
			{Name: "eu", Region: "eu-west-1", Primary: true, Services: map[string]string{"rest": "https://api-eu.broker.example"}},
			{Name: "us", Region: "us-east-1", Priority: 10, Services: map[string]string{"rest": "https://api-us.broker.example"}},
		}
		cfg.Probe = func(ctx context.Context, ep pathdialer.Endpoint) error {
			if ep.Name == "eu" && down.Load() {
				return errors.New("503: " + huge)
			}
			return nil
		}
		cfg.ProbeInterval, cfg.ProbeTimeout, cfg.ProbeJitter = 20*time.Millisecond, 10*time.Millisecond, 0
		cfg.Engine.FailureThreshold = 2
		cfg.Engine.MaxHealthAge = time.Second
		cfg.Fencer = pathdialer.LocalFenceOnly
		cfg.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
			if fails.Add(-1) >= 0 {
				return nil, errors.New(`lookup: status "` + huge + `"`)
			}
			var out []pathdialer.Settlement
			for _, tk := range r.Tickets {
				out = append(out, pathdialer.Settlement{OrderID: tk.OrderID, Service: tk.Service, Fate: pathdialer.FateNotReceived, Detail: huge})
			}
			return out, nil
		}
		cfg.OnEvent = rec.OnEvent
		p, err := pathdialer.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		h := status.Handler(p, status.Options{Recorder: rec})
		if _, err := p.Acquire(context.Background(), pathdialer.ServiceREST, "o-1"); err != nil {
			t.Fatal(err)
		}
		down.Store(true)
		for i := 0; ; i++ { // one Snapshot per look (two could straddle the switch)
			if s := p.Snapshot(); s.Gate == pathdialer.GateOpen && s.Token > 0 {
				break
			}
			if i > 2500 {
				t.Fatalf("no failover: gate %v, gen %d", p.Snapshot().Gate, p.Snapshot().Token)
			}
			<-time.After(20 * time.Millisecond)
		}
		synctest.Wait()
		js := get(t, h, "/status.json", "").Body.String()
		page := get(t, h, "/", "").Body.String()
		for name, out := range map[string]string{"status.json": js, "HTML": page} {
			if len(out) > 64<<10 {
				t.Errorf("%s is %d bytes", name, len(out))
			}
			if !strings.Contains(out, "bytes)") {
				t.Errorf("%s: no length note on the cut text", name)
			}
			if strings.Contains(out, "<b>ACCEPTED") {
				t.Errorf("%s: counterparty markup rendered", name)
			}
		}
	})
}
