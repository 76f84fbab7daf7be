package etcdcoord_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// largeReads is a gRPC unary interceptor that counts the answers carrying
// more than 256 KiB of values and hands each to the caller delay after it
// arrived (a large record delivered slowly by a loaded host): an attempt
// whose timeout is shorter gives up on it.
type largeReads struct {
	delay   time.Duration
	large   atomic.Int64 // answers carrying > 256 KiB of values
	refused atomic.Int64 // answers the client refused as too large
}

func rangeValueBytes(rr *pb.RangeResponse) int {
	n := 0
	for _, kv := range rr.GetKvs() {
		n += len(kv.Value)
	}
	return n
}

func txnValueBytes(tr *pb.TxnResponse) int {
	n := 0
	for _, op := range tr.GetResponses() {
		n += rangeValueBytes(op.GetResponseRange()) + txnValueBytes(op.GetResponseTxn())
	}
	return n
}

func (l *largeReads) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if status.Code(err) == codes.ResourceExhausted {
		l.refused.Add(1)
	}
	if err != nil {
		return err
	}
	n := 0
	switch r := reply.(type) {
	case *pb.RangeResponse:
		n = rangeValueBytes(r)
	case *pb.TxnResponse:
		n = txnValueBytes(r)
	}
	if n <= 256<<10 {
		return nil
	}
	l.large.Add(1)
	t := time.NewTimer(l.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readCountConn counts the bytes a client reads from etcd.
type readCountConn struct {
	net.Conn
	n *atomic.Int64
}

func (c readCountConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// slowLargeClient is a client of endpoint whose answers carrying more than
// 256 KiB of values slow delays (and counts), and whose bytes read from etcd
// read counts.
func slowLargeClient(t *testing.T, endpoint string, slow *largeReads, read *atomic.Int64) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            []string{endpoint},
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(slow.intercept),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				if err != nil {
					return nil, err
				}
				return readCountConn{c, read}, nil
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// oversizedRecord starts a rig with a 1 MiB record (Active on endpoint) on
// the assignment key at rev, and a client of it (slowLargeClient) whose
// answers carrying it slow delays 2 s and whose bytes read read counts.
func oversizedRecord(t *testing.T, endpoint string) (r *rig, big []byte, rev int64, slow *largeReads, read *atomic.Int64, cli *clientv3.Client) {
	t.Helper()
	r = newRig(t)
	big, _ = json.Marshal(etcdcoord.Assignment{Phase: etcdcoord.PhaseActive, Endpoint: endpoint, Reason: strings.Repeat("x", 1<<20)})
	put, err := r.cli.Put(r.ctx, prefix+"assignment", string(big))
	if err != nil {
		t.Fatal(err)
	}
	slow, read = &largeReads{delay: 2 * time.Second}, new(atomic.Int64)
	return r, big, put.Header.Revision, slow, read, slowLargeClient(t, r.srv.Endpoint, slow, read)
}

// notReceived fails t when the record big was received in an answer (slow
// counted one) or when who's client read more than twice its size from etcd
// within d.
func notReceived(t *testing.T, who string, big []byte, slow *largeReads, read *atomic.Int64, d time.Duration) {
	t.Helper()
	if n := slow.large.Load(); n > 0 {
		t.Fatalf("the %d-byte record was fetched %d times in %v", len(big), n, d)
	}
	if got := read.Load(); got > 2*int64(len(big)) {
		t.Fatalf("the %s's client read %d bytes from etcd in %v (the record is %d bytes)", who, got, d, len(big))
	}
}

// A follower whose session starts while a 1 MiB record (far above its 64 KiB
// limit) is on the assignment key, on a host that delivers such a record
// slower than an attempt's timeout, does not fetch it again at every attempt
// (each would make etcd send it again from its first byte): it learns that
// the record is too large without receiving it, refuses it, holds, and
// keeps its session; later reads ask only whether the key is still at that
// revision.
func TestFollowerDoesNotRefetchAnOversizedRecord(t *testing.T) {
	r, big, rev, slow, read, cli := oversizedRecord(t, "eu")
	p := r.coordinatedPath()
	fc := etcdcoord.DefaultFollowerConfig()
	fc.Client, fc.Prefix, fc.Name, fc.Target = cli, prefix, "trader-big", p
	fc.TTL, fc.Margin = time.Second, 200*time.Millisecond
	f, err := etcdcoord.NewFollower(fc)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r.goRun(r.ctx, f.Run)

	// Three leases' worth of attempts and sessions.
	<-time.After(3 * fc.TTL)
	st := f.State()
	gate, cause := p.GateState()
	t.Logf("in %v: %d answers carrying the %d-byte record, %d refused from their length, %d bytes read by the follower's client; state %+v; gate %v (%v)",
		time.Since(start).Round(time.Millisecond), slow.large.Load(), len(big), slow.refused.Load(), read.Load(), st, gate, cause)
	notReceived(t, "follower", big, slow, read, 3*fc.TTL)
	if !st.Session || st.Revision != rev || !strings.Contains(st.Refused, "limit") || st.Assignment != (etcdcoord.Assignment{}) {
		t.Fatalf("follower state %+v: want a live session with the record at %d refused as too large", st, rev)
	}
	if gate == pathdialer.GateOpen {
		t.Fatalf("gate open on a refused record")
	}
}

// The receive limit goes with clientv3's own KV only: a follower whose client
// carries a KV the caller wrapped (clientv3/namespace) reads through it.
func TestFollowerReadsThroughAWrappedKV(t *testing.T) {
	srv := etcdtest.Start(t)
	wrapped := etcdtest.NewClient(t, srv.Endpoint)
	wrapped.KV = namespace.NewKV(wrapped.KV, "/tenant-a")
	for _, c := range []struct {
		name string
		cli  *clientv3.Client
		want bool
	}{{"clientv3's KV", srv.Client(t), true}, {"a namespaced KV", wrapped, false}} {
		fc := etcdcoord.DefaultFollowerConfig()
		fc.Client, fc.Prefix, fc.Name, fc.Target = c.cli, prefix, "trader-1", (*pathdialer.Path)(nil) // not run
		f, err := etcdcoord.NewFollower(fc)
		if err != nil {
			t.Fatal(err)
		}
		if got := etcdcoord.CapsAssignmentReads(f); got != c.want {
			t.Errorf("%s: reads capped %v, want %v", c.name, got, c.want)
		}
	}
}
