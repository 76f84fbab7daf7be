package integration_test

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// A heal that finds the relay's port held by another process for a moment
// (Down closed the relay's listener; on a shared host anything may bind the
// port meanwhile) is tried again until the port is free, instead of failing
// the test on "address already in use".
func TestRecoverWaitsForTheRelayPort(t *testing.T) {
	b, err := simbroker.Start(context.Background(), simbroker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	e := &env{t: t, b: b, bud: newBudget()}
	sc := scenario(t, "down")
	if err := sc.Inject(b); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(b.Region("eu").RESTURL())
	if err != nil {
		t.Fatal(err)
	}
	// Another process takes the port while the relay is Down.
	squatter, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("the relay's port %s should be free while it is Down: %v", u.Host, err)
	}
	released := time.AfterFunc(300*time.Millisecond, func() { _ = squatter.Close() })
	defer released.Stop()
	if err := e.recover(&sc, "eu"); err != nil {
		t.Fatalf("recover while the port was held for 300 ms: %v", err)
	}
	// Healed: the relay answers again.
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatalf("after recover, dial %s: %v", u.Host, err)
	}
	_ = c.Close()
}
