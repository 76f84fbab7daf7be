package fix

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/proxy"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// The relay is reachable on 127.0.0.1 by any local process. Only a client
// holding the session's own SOCKS credentials (quickfix, through the settings
// NewInitiator wrote) is spliced to the broker; another local client —
// speaking raw FIX, SOCKS without or with the wrong credentials — is refused
// before anything is dialed.
func TestRelayRefusesEveryClientButItsOwn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }() // echo
		}
	}()
	defer ln.Close()
	cfg := pathtest.FastConfig([]pathdialer.Endpoint{
		{Name: "eu", Region: "eu-west", Primary: true, Services: map[string]string{"fix": ln.Addr().String()}},
		{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"fix": ln.Addr().String()}},
	}, pathtest.NewProbes("eu", "us"))
	p := pathtest.Start(t, cfg)
	r, err := newRelay(p, "fix", nil, time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r.start()
	defer r.close()

	refused := func(name string, c net.Conn) {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		// until the relay closes (or resets) it; a timeout means it was held open
		if _, err := io.Copy(io.Discard, c); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("%s: not closed by the relay: %v", name, err)
			}
		}
		_ = c.Close()
	}
	// 1. Raw FIX from another local process.
	c, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("8=FIX.4.4\x019=5\x0135=A\x0110=000\x01"))
	refused("raw FIX", c)
	// 2. SOCKS5 with the wrong password; 3. SOCKS5 with no authentication.
	for _, auth := range []*proxy.Auth{{User: r.user, Password: "guess"}, nil} {
		d, err := proxy.SOCKS5("tcp", r.addr(), auth, &net.Dialer{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if c, err := d.(proxy.ContextDialer).DialContext(ctx, "tcp", "broker.invalid:1"); err == nil {
			_ = c.Close()
			t.Errorf("SOCKS client with auth %v was let through", auth != nil)
		}
		cancel()
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("%d refused clients reached the broker", n)
	}
	if n := r.refused.Load(); n != 3 {
		t.Errorf("relay counted %d refusals, want 3", n)
	}
	// The session's own credentials are spliced to the broker.
	d, err := proxy.SOCKS5("tcp", r.addr(), &proxy.Auth{User: r.user, Password: r.pass}, &net.Dialer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	own, err := d.(proxy.ContextDialer).DialContext(ctx, "tcp", "broker.invalid:1")
	if err != nil {
		t.Fatalf("own client refused: %v", err)
	}
	defer own.Close()
	ping := "8=FIX.4.4\x019=5\x0135=0\x0110=163\x01" // what the broker sends is framed: a FIX message
	if _, err := own.Write([]byte(ping)); err != nil {
		t.Fatal(err)
	}
	echo := make([]byte, len(ping))
	if _, err := io.ReadFull(own, echo); err != nil || string(echo) != ping {
		t.Fatalf("spliced connection echoed %q, %v", echo, err)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("broker accepted %d connections, want 1", n)
	}
	// A second local client while the session is connected is refused too.
	c2, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c2.Write([]byte{5, 1, 0}) // SOCKS5, "no authentication"
	refused("second client", c2)
	if n := accepted.Load(); n != 1 {
		t.Errorf("the second client reached the broker (%d connections)", n)
	}
}
