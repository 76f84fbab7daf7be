package ws_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// Against the simulated broker (wss, API key, replay buffer): kill the primary
// region mid-stream; the handler sees every sequence once, in order.
func TestSimbrokerRegionKilledMidStream(t *testing.T) {
	cfg := simbroker.DefaultConfig()
	cfg.TickInterval = 0 // the test publishes
	cfg.Streams = []string{px}
	cfg.PingInterval = 50 * time.Millisecond
	b, err := simbroker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var eps []pathdialer.Endpoint
	for _, rg := range b.Regions() {
		eps = append(eps, pathdialer.Endpoint{Name: rg.Name(), Region: rg.Name(), Services: map[string]string{"ws": rg.WSURL()}})
	}
	h := newPathHarness(t, eps, nil)
	rec := &recorder{}
	scfg := fastConfig(rec, px)
	scfg.Dialer = &websocket.Dialer{TLSClientConfig: b.ClientTLSConfig(), HandshakeTimeout: time.Second}
	scfg.Header = http.Header{"X-API-Key": {b.APIKey()}}
	s := startStream(t, h.path, scfg)

	publish := func(until func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !until() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out; stats %+v", s.Stats())
			}
			if _, err := b.PublishTick(px); err != nil {
				t.Fatal(err)
			}
			<-time.After(time.Millisecond)
		}
	}
	publish(func() bool { return rec.lastSeq() >= 30 })
	if err := b.SetFault(eps[0].Name, simbroker.WS, simbroker.Down{}); err != nil {
		t.Fatal(err)
	}
	h.down[eps[0].Name].Store(true)
	publish(func() bool { return s.Stats().Endpoint == eps[1].Name && rec.lastSeq() >= 150 })
	tk, err := b.PublishTick(px)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the last tick", func() bool { return rec.lastSeq() == tk.Seq })
	checkExactlyOnce(t, rec.snapshot(), tk.Seq)
	if st := s.Stats(); st.Resumes != 1 || st.Snapshots != 0 {
		t.Fatalf("stats %+v: want one resume from the replay buffer", st)
	}
	if ws := b.Region(eps[1].Name).WSStats(); ws.Resumes != 1 {
		t.Fatalf("survivor WS stats %+v", ws)
	}
}
