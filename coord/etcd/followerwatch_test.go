package etcdcoord_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
)

// slowLargeWatch is a gRPC stream interceptor that hands a watch response
// carrying more than 256 KiB of values to the client delay after it
// arrived (and, on one stream, every response after it waits behind it): a
// large event delivered slowly by a loaded host.
type slowLargeWatch struct {
	delay   time.Duration
	mu      sync.Mutex
	streams int // watch streams opened
}

func (s *slowLargeWatch) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method != "/etcdserverpb.Watch/Watch" {
		return cs, err
	}
	s.mu.Lock()
	s.streams++
	s.mu.Unlock()
	return &slowStream{ClientStream: cs, delay: s.delay}, nil
}

func (s *slowLargeWatch) opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams
}

type slowStream struct {
	grpc.ClientStream
	delay time.Duration
}

func (s *slowStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if wr, ok := m.(*pb.WatchResponse); ok && err == nil {
		n := 0
		for _, ev := range wr.Events {
			if ev.Kv != nil {
				n += len(ev.Kv.Value)
			}
		}
		if n > 256<<10 {
			t := time.NewTimer(s.delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-s.Context().Done():
				return s.Context().Err()
			}
		}
	}
	return err
}

// A record far above the library's limit that a loaded host takes longer to
// deliver than the watch's silence bound (TTL/5) is delivered: the follower
// does not restart its watch from the same revision forever (each restart
// makes etcd send the record again from its first byte), and once it is
// delivered a record after it arrives without delay.
func TestFollowerWatchDeliversASlowLargeRecord(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us", "mon-ap"} {
		r.observer(o)
	}
	r.decider(r.cli, "decider-1")
	const ttl = 2 * time.Second // silence bound 400 ms
	slow := &slowLargeWatch{delay: time.Second}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            []string{r.srv.Endpoint},
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
		DialOptions:          []grpc.DialOption{grpc.WithStreamInterceptor(slow.intercept)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	p := r.coordinatedPath()
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target = cli, prefix, "trader-slow-watch", p
	fc.TTL, fc.Margin = ttl, 400*time.Millisecond
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	events := map[int64]time.Time{}
	etcdcoord.SetTrace(f, func(step string, rev int64) {
		if step == "event" {
			mu.Lock()
			if _, ok := events[rev]; !ok {
				events[rev] = time.Now()
			}
			mu.Unlock()
		}
	})
	r.goRun(r.ctx, f.Run)
	tr := &trader{name: "trader-slow-watch", path: p, f: f}
	active := waitActive(t, h, "eu", tr)

	big := active.a
	big.Reason = strings.Repeat("x", 1<<20)
	b, _ := json.Marshal(big)
	resp, err := r.cli.Put(r.ctx, prefix+"assignment", string(b))
	if err != nil {
		t.Fatal(err)
	}
	put, before := time.Now(), slow.opened()
	delivered := func() (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := events[resp.Header.Revision]
		return at, ok
	}
	at, ok := delivered()
	for ; !ok && time.Since(put) < 8*time.Second; at, ok = delivered() {
		<-time.After(20 * time.Millisecond)
	}
	if !ok {
		t.Fatalf("the %d-byte record (each delivery held 1 s) not delivered by the watch %v after the write; %d watch streams opened meanwhile", len(b), time.Since(put).Round(time.Millisecond), slow.opened()-before)
	}
	t.Logf("%d-byte record delivered %v after the write (each delivery held 1 s), %d watch streams opened meanwhile", len(b), at.Sub(put).Round(time.Millisecond), slow.opened()-before)
	// The decider repairs the record; the repair reaches the follower.
	last := waitActive(t, h, "eu", tr)
	if last.rev <= resp.Header.Revision {
		t.Fatalf("eu active at %d, the large record at %d", last.rev, resp.Header.Revision)
	}
}
