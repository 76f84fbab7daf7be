package simbroker_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/internal/simbroker"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// A region's feed restart (new epoch, numbering from 0) is delivered to a real
// ws.Stream as one snapshot flagged Restart carrying the new epoch, answered to
// the stream's resume with the old epoch; ticks then continue from it in the
// new numbering, and the other region's epoch is untouched.
func TestFeedRestartDeliveredAsRestartSnapshot(t *testing.T) {
	const px = "px.EURUSD"
	cfg := simbroker.DefaultConfig()
	cfg.TickInterval = 0 // the test publishes
	cfg.Streams = []string{px}
	cfg.PingInterval = 50 * time.Millisecond
	b, err := simbroker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	regions := b.Regions()
	if len(regions) < 2 || regions[0].FeedEpoch() == "" || regions[0].FeedEpoch() != regions[1].FeedEpoch() {
		t.Fatalf("regions start in one sequence space with an epoch; got %d regions", len(regions))
	}
	var eps []pathdialer.Endpoint
	var names []string
	for i, rg := range regions {
		eps = append(eps, pathdialer.Endpoint{Name: rg.Name(), Region: rg.Name(), Priority: i, Primary: i == 0,
			Services: map[string]string{"ws": rg.WSURL()}})
		names = append(names, rg.Name())
	}
	path := pathtest.Start(t, pathtest.FastConfig(eps, pathtest.NewProbes(names...)))

	var mu sync.Mutex
	var got []ws.Message
	scfg := ws.DefaultStreamConfig()
	scfg.Streams = []string{px}
	scfg.Handler = func(m ws.Message) { mu.Lock(); got = append(got, m); mu.Unlock() }
	scfg.Backoff = ws.Backoff{Base: 10 * time.Millisecond, Cap: 100 * time.Millisecond}
	scfg.PingInterval, scfg.PongTimeout, scfg.DialTimeout = 50*time.Millisecond, 100*time.Millisecond, time.Second
	scfg.Dialer = &websocket.Dialer{TLSClientConfig: b.ClientTLSConfig(), HandshakeTimeout: time.Second}
	scfg.Header = http.Header{"X-API-Key": {b.APIKey()}}
	s, err := ws.NewStream(path, scfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	msgs := func() []ws.Message { mu.Lock(); defer mu.Unlock(); return append([]ws.Message(nil), got...) }
	lastSeq := func() uint64 {
		m := msgs()
		if len(m) == 0 {
			return 0
		}
		return m[len(m)-1].Seq
	}
	publish := func(what string, until func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !until() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; stats %+v", what, s.Stats())
			}
			if _, err := b.PublishTick(px); err != nil {
				t.Fatal(err)
			}
			<-time.After(time.Millisecond)
		}
	}

	publish("30 ticks", func() bool { return lastSeq() >= 30 })
	before := regions[0].FeedEpoch()
	regions[0].RestartFeed()
	after := regions[0].FeedEpoch()
	if after == before || after == "" {
		t.Fatalf("epoch %q after restart, was %q: want a new one", after, before)
	}
	if regions[1].FeedEpoch() != before {
		t.Fatalf("the other region's epoch changed to %q", regions[1].FeedEpoch())
	}
	publish("the restart and 20 ticks after it", func() bool {
		st := s.Stats()
		return st.Restarts == 1 && st.Endpoint == regions[0].Name() && lastSeq() >= 20 && lastSeq() < 1000
	})

	all := msgs()
	restart := -1
	for i, m := range all {
		if m.Restart {
			if restart >= 0 {
				t.Fatalf("second restart at %d (seq %d)", i, m.Seq)
			}
			restart = i
		}
	}
	if restart < 1 {
		t.Fatalf("no restart after the first message in %d messages", len(all))
	}
	r := all[restart]
	if !r.Snapshot || r.Epoch != after || r.Endpoint != regions[0].Name() {
		t.Fatalf("restart message %+v: want a snapshot in epoch %q from %s", r, after, regions[0].Name())
	}
	if prev := all[restart-1]; prev.Epoch != before || prev.Seq < 30 {
		t.Fatalf("message before the restart %+v: want epoch %q, seq >= 30", prev, before)
	}
	for i := restart + 1; i < len(all); i++ {
		if m := all[i]; m.Seq != all[i-1].Seq+1 || m.Snapshot || m.Epoch != after {
			t.Fatalf("message %d after the restart %+v: want seq %d in epoch %q, no snapshot", i, m, all[i-1].Seq+1, after)
		}
	}
	if st := regions[0].WSStats(); st.Snapshots < 1 {
		t.Fatalf("region WS stats %+v: the old-epoch resume should have been answered with a snapshot", st)
	}
	if st := s.Stats(); st.Snapshots != 1 || st.Restarts != 1 {
		t.Fatalf("stream stats %+v: want the resume answered by one snapshot, one restart", st)
	}
}
