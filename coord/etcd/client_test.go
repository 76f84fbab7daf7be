package etcdcoord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/internal/faultnet"
)

// threeRelays puts three relays in front of one embedded etcd member: to a
// NewClient, three members it can fault one by one.
func threeRelays(t *testing.T) (*clientv3.Client, []*faultnet.Relay) {
	t.Helper()
	s := etcdtest.Start(t)
	var relays []*faultnet.Relay
	var eps []string
	for _, name := range []string{"m0", "m1", "m2"} {
		r, err := faultnet.New(faultnet.Config{Target: s.Endpoint, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		relays = append(relays, r)
		eps = append(eps, r.Addr())
	}
	cli, err := etcdcoord.NewClient(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli, relays
}

// onRelay returns the relay carrying the client's one connection (-1 when
// none or more than one carries a live one).
func onRelay(relays []*faultnet.Relay) int {
	at := -1
	for i, r := range relays {
		if r.Stats().Active > 0 {
			if at >= 0 {
				return -1
			}
			at = i
		}
	}
	return at
}

func putWithin(ctx context.Context, cli *clientv3.Client, budget time.Duration, v string) error {
	return etcdcoord.CallUntil(ctx, time.Now().Add(budget), 200*time.Millisecond, func(cctx context.Context) error {
		_, err := cli.Put(cctx, "/client-test/k", v)
		return err
	})
}

// TestNewClientLeavesSilentMember: the member the client is connected to
// stops answering with its connection open (blackholed): the retried write
// goes through on another member within the status request's timeout and a
// few attempts, and the client never goes back to the silent member.
func TestNewClientLeavesSilentMember(t *testing.T) {
	cli, relays := threeRelays(t)
	ctx := etcdtest.Ctx(t)
	if err := putWithin(ctx, cli, 5*time.Second, "a"); err != nil {
		t.Fatal(err)
	}
	first := onRelay(relays)
	if first < 0 {
		t.Fatalf("after a write: connections per relay %d/%d/%d; want one", relays[0].Stats().Active, relays[1].Stats().Active, relays[2].Stats().Active)
	}
	if err := relays[first].SetFault(faultnet.Blackhole()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := putWithin(ctx, cli, 5*time.Second, "b"); err != nil {
		t.Fatalf("write with the connected member silent: %v", err)
	}
	took := time.Since(start)
	// 200 ms attempt, 1 s status request, then the next member.
	if took > 3*time.Second {
		t.Fatalf("write with the connected member silent took %v; want the client on another member within about 1.2 s", took)
	}
	// Later failures of the new member's calls must not send the client
	// back: the silent member stays suspected.
	for i := range 5 {
		if err := putWithin(ctx, cli, 5*time.Second, string(rune('c'+i))); err != nil {
			t.Fatal(err)
		}
	}
	// Per other member: at most the short status connection and the
	// client's own.
	for i, r := range relays {
		if i != first && r.Stats().Accepted > 2 {
			t.Errorf("relay %d accepted %d connections; want at most two", i, r.Stats().Accepted)
		}
	}
	live := 0
	for i, r := range relays {
		if i != first {
			live += r.Stats().Active
		}
	}
	if live != 1 {
		t.Errorf("after the move: %d connections open to the other members; want the client's one", live)
	}
	if got := relays[first].Stats().Accepted; got != 1 {
		t.Errorf("the silent member's relay accepted %d connections; want 1 (the client never came back)", got)
	}
	t.Logf("connected member silent: write through in %v", took.Round(time.Millisecond))
}

// TestNewClientStaysOnSlowMember: a member that answers, but slower than the
// calls' timeouts (as every member does while etcd elects a raft leader,
// refusing calls), is not left: the status request it answers keeps the
// client there. The client may ask the other members meanwhile (when the
// slow member's answer takes longer than askOthersAfter, as it can on a
// loaded host: 200 ms of round trip leaves it 50 ms), but over short status
// connections only: its own connection stays on the slow member, never
// opened again.
func TestNewClientStaysOnSlowMember(t *testing.T) {
	cli, relays := threeRelays(t)
	ctx := etcdtest.Ctx(t)
	if err := putWithin(ctx, cli, 5*time.Second, "a"); err != nil {
		t.Fatal(err)
	}
	first := onRelay(relays)
	if first < 0 {
		t.Fatal("no single connection after a write")
	}
	// 100 ms each way: every 100 ms attempt times out, the status request
	// (1 s) is answered.
	if err := relays[first].SetFault(faultnet.Latency(100*time.Millisecond, 0)); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := cli.Put(cctx, "/client-test/k", "slow")
		cancel()
		if err != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no call timed out on the slow member: the test did not exercise anything")
	}
	asked := 0
	for i, r := range relays {
		if i != first {
			asked += int(r.Stats().Accepted)
		}
	}
	if err := putWithin(ctx, cli, 5*time.Second, "b"); err != nil {
		t.Fatalf("write on the slow member with a long enough attempt: %v", err)
	}
	// Status connections to the others close after their answer: poll
	// until only the client's own is open (an end-to-end wait, bounded).
	etcdtest.Eventually(t, 5*time.Second, "the client's connection on the slow member alone (it left it)", func() bool {
		return onRelay(relays) == first
	})
	if got := relays[first].Stats().Accepted; got != 1 {
		t.Errorf("the slow member's relay accepted %d connections; want 1 (the client never left it)", got)
	}
	t.Logf("%d calls timed out on the slow member; client stayed (%d status connections to the others)", failed, asked)
}

// TestNewClientConfig: what NewClient refuses, named.
func TestNewClientConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  clientv3.Config
		want string
	}{
		{clientv3.Config{}, "Endpoints is empty"},
		{clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, AutoSyncInterval: time.Minute}, "AutoSyncInterval"},
	} {
		if _, err := etcdcoord.NewClient(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewClient(%+v): %v; want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}
