package faultnet

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer echoes every connection line by line and records the peer
// addresses it has seen.
type echoServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	peers []string
	conns []net.Conn
}

func newEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.peers = append(e.peers, c.RemoteAddr().String())
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		e.mu.Lock()
		for _, c := range e.conns {
			_ = c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *echoServer) addr() string { return e.ln.Addr().String() }

func (e *echoServer) peerList() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.peers...)
}

func newRelay(t *testing.T, target string) *Relay {
	t.Helper()
	r, err := New(Config{Target: target, Name: t.Name(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg+"\n" and reads one line back within timeout.
func roundTrip(c net.Conn, msg string, timeout time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	return line[:len(line)-1], nil
}

func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-time.After(5 * time.Millisecond)
	}
}

func TestNoneForwardsAndLooksUpUpstream(t *testing.T) {
	e := newEcho(t)
	r := newRelay(t, e.addr())
	c := dial(t, r.Addr())
	got, err := roundTrip(c, "hello", 2*time.Second)
	if err != nil || got != "hello" {
		t.Fatalf("round trip = %q, %v; want hello", got, err)
	}
	peers := e.peerList()
	if len(peers) != 1 {
		t.Fatalf("echo saw %d peers, want 1", len(peers))
	}
	info, ok := r.LookupUpstream(peers[0])
	if !ok {
		t.Fatalf("LookupUpstream(%s) found nothing", peers[0])
	}
	conns := r.Conns()
	if len(conns) != 1 || conns[0].ID != info.ID || info.ID != 1 {
		t.Fatalf("Conns = %+v, lookup = %+v; want one conn with ID 1", conns, info)
	}
	if info.Client != c.LocalAddr().String() {
		t.Fatalf("ConnInfo.Client = %s, want %s", info.Client, c.LocalAddr())
	}
	if st := r.Stats(); st.Accepted != 1 || st.Active != 1 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestHalfCloseDeliversEverything(t *testing.T) {
	e := newEcho(t)
	r := newRelay(t, e.addr())
	c := dial(t, r.Addr())
	if _, err := io.WriteString(c, "abc"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "abc" {
		t.Fatalf("ReadAll = %q, %v; want abc, nil", b, err)
	}
	waitFor(t, "conn to be forgotten", func() bool { return len(r.Conns()) == 0 })
}

func TestDownRefusesResetsAndRelistensOnSameAddr(t *testing.T) {
	e := newEcho(t)
	r := newRelay(t, e.addr())
	addr := r.Addr()
	live := dial(t, addr)
	if _, err := roundTrip(live, "x", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.SetFault(Down()); err != nil {
		t.Fatal(err)
	}
	_ = live.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := live.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("live conn read after Down = %v; want reset/EOF", err)
	}
	_, err := net.DialTimeout("tcp", addr, time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while Down = %v; want connection refused", err)
	}
	if err := r.SetFault(None()); err != nil {
		t.Fatal(err)
	}
	if r.Addr() != addr {
		t.Fatalf("Addr changed across Down: %s -> %s", addr, r.Addr())
	}
	c := dial(t, addr)
	if got, err := roundTrip(c, "back", 2*time.Second); err != nil || got != "back" {
		t.Fatalf("after Down->None round trip = %q, %v", got, err)
	}
	if st := r.Stats(); st.Resets < 1 {
		t.Fatalf("Stats.Resets = %d, want >= 1", st.Resets)
	}
}

func TestBlackholeHoldsThenDelivers(t *testing.T) {
	e := newEcho(t)
	r := newRelay(t, e.addr())
	live := dial(t, r.Addr())
	if _, err := roundTrip(live, "warm", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.SetFault(Blackhole()); err != nil {
		t.Fatal(err)
	}
	// Live connection goes silent.
	if _, err := roundTrip(live, "held-live", 150*time.Millisecond); !isTimeout(err) {
		t.Fatalf("live round trip under blackhole = %v; want timeout", err)
	}
	// New connections are accepted, then silent; the target is never dialled.
	fresh := dial(t, r.Addr())
	if _, err := roundTrip(fresh, "held-new", 150*time.Millisecond); !isTimeout(err) {
		t.Fatalf("new round trip under blackhole = %v; want timeout", err)
	}
	if n := len(e.peerList()); n != 1 {
		t.Fatalf("target saw %d conns under blackhole, want 1 (the warm one)", n)
	}
	if err := r.SetFault(None()); err != nil {
		t.Fatal(err)
	}
	// Held bytes arrive in order once healed.
	for _, tc := range []struct {
		c    net.Conn
		want string
	}{{live, "held-live"}, {fresh, "held-new"}} {
		_ = tc.c.SetReadDeadline(time.Now().Add(2 * time.Second))
		line, err := bufio.NewReader(tc.c).ReadString('\n')
		if err != nil || line != tc.want+"\n" {
			t.Fatalf("after heal read %q, %v; want %q", line, err, tc.want)
		}
	}
}

func TestLatencyDelaysBothDirections(t *testing.T) {
	e := newEcho(t)
	r := newRelay(t, e.addr())
	c := dial(t, r.Addr())
	if err := r.SetFault(Latency(60*time.Millisecond, 20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got, err := roundTrip(c, "slow", 5*time.Second); err != nil || got != "slow" {
		t.Fatalf("round trip = %q, %v", got, err)
	}
	if rtt := time.Since(start); rtt < 120*time.Millisecond {
		t.Fatalf("RTT %v under 60ms latency each way; want >= 120ms", rtt)
	}
	if err := r.SetFault(None()); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := roundTrip(c, "fast", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt >= 120*time.Millisecond {
		t.Fatalf("RTT %v after clearing latency; want < 120ms", rtt)
	}
}

func TestResetIsMomentary(t *testing.T) {
	e := newEcho(t)
	r := newRelay(t, e.addr())
	a := dial(t, r.Addr())
	if _, err := roundTrip(a, "a", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.SetFault(Reset()); err != nil {
		t.Fatal(err)
	}
	_ = a.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after Reset = %v; want ECONNRESET", err)
	}
	if f := r.Fault(); f.Kind != KindNone {
		t.Fatalf("Fault after Reset = %v, want none", f)
	}
	b := dial(t, r.Addr())
	if got, err := roundTrip(b, "b", 2*time.Second); err != nil || got != "b" {
		t.Fatalf("new conn after Reset = %q, %v", got, err)
	}
}

func TestResetConnHitsOnlyThatConn(t *testing.T) {
	e := newEcho(t)
	r := newRelay(t, e.addr())
	a := dial(t, r.Addr())
	b := dial(t, r.Addr())
	for _, c := range []net.Conn{a, b} {
		if _, err := roundTrip(c, "w", 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	var aID uint64
	for _, ci := range r.Conns() {
		if ci.Client == a.LocalAddr().String() {
			aID = ci.ID
		}
	}
	if !r.ResetConn(aID) {
		t.Fatalf("ResetConn(%d) = false", aID)
	}
	if r.ResetConn(9999) {
		t.Fatal("ResetConn(9999) = true for an unknown ID")
	}
	_ = a.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read on reset conn = %v; want ECONNRESET", err)
	}
	if got, err := roundTrip(b, "still", 2*time.Second); err != nil || got != "still" {
		t.Fatalf("other conn after ResetConn = %q, %v", got, err)
	}
	if n := r.ResetAll(); n != 1 {
		t.Fatalf("ResetAll = %d, want 1", n)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	e := newEcho(t)
	r, err := Listen(e.addr())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, r.Addr())
	if _, err := roundTrip(c, "x", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.SetFault(Blackhole()); err != nil {
		t.Fatal(err)
	}
	held := dial(t, r.Addr()) // parked in accept-then-silence
	_ = held
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := r.SetFault(None()); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetFault after Close = %v, want ErrClosed", err)
	}
	if _, err := net.DialTimeout("tcp", r.Addr(), time.Second); err == nil {
		t.Fatal("dial after Close succeeded")
	}
	if n := len(r.Conns()); n != 0 {
		t.Fatalf("%d conns tracked after Close", n)
	}
}

func TestDialFailureResetsClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	// The OS may hand the dead port straight back to the relay's own listener;
	// then the target would be the relay itself. Take another dead port.
	r := newRelay(t, dead)
	for i := 0; r.Addr() == dead; i++ {
		if i == 5 {
			t.Fatalf("the relay kept getting the dead target's port %s", dead)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead = ln.Addr().String()
		_ = ln.Close()
		r = newRelay(t, dead)
	}
	c, err := net.DialTimeout("tcp", r.Addr(), 2*time.Second)
	if err == nil {
		// The reset may also beat connect() back to us; then Dial fails instead.
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("read with dead target = %v; want reset", err)
		}
	}
	waitFor(t, "dial error counted", func() bool { return r.Stats().DialErrors == 1 })
}

func TestConfigAndFaultValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"empty target", Config{}},
		{"bad target", Config{Target: "nope"}},
		{"negative dial timeout", Config{Target: "127.0.0.1:1", DialTimeout: -1}},
	} {
		if _, err := New(tc.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", tc.name, err)
		}
	}
	for _, f := range []Fault{{Kind: 99}, {Kind: KindLatency, Delay: -1}, {Kind: KindLatency, Jitter: -1}} {
		if err := f.Validate(); !errors.Is(err, ErrInvalidFault) {
			t.Errorf("Validate(%v) = %v, want ErrInvalidFault", f, err)
		}
	}
	e := newEcho(t)
	r := newRelay(t, e.addr())
	if err := r.SetFault(Fault{Kind: 42}); !errors.Is(err, ErrInvalidFault) {
		t.Fatalf("SetFault(invalid) = %v", err)
	}
	if got := Latency(time.Second, 0).String(); got != "latency(1s+[0,0s])" {
		t.Fatalf("String = %q", got)
	}
}
