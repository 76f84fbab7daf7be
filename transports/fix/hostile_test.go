package fix_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/pathtest"
	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// hostileAcceptor is a TCP acceptor on loopback that answers every connection
// with prefix followed by filler bytes, sending at most budget bytes in total
// (over all connections), then holds the connection open.
type hostileAcceptor struct {
	ln     net.Listener
	prefix []byte
	budget atomic.Int64
	cut    chan struct{} // closed when a write failed: the client cut the connection
	spent  chan struct{} // closed when the whole budget was sent
	once   sync.Once
	sOnce  sync.Once
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newHostileAcceptor(t *testing.T, prefix string, budget int64) *hostileAcceptor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &hostileAcceptor{ln: ln, prefix: []byte(prefix), cut: make(chan struct{}), spent: make(chan struct{})}
	a.budget.Store(budget)
	a.wg.Add(1)
	go a.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		a.mu.Lock()
		for _, c := range a.conns {
			_ = c.Close()
		}
		a.mu.Unlock()
		a.wg.Wait()
	})
	return a
}

func (a *hostileAcceptor) serve() {
	defer a.wg.Done()
	for {
		c, err := a.ln.Accept()
		if err != nil {
			return
		}
		a.mu.Lock()
		a.conns = append(a.conns, c)
		a.mu.Unlock()
		a.wg.Add(1)
		go a.feed(c)
	}
}

func (a *hostileAcceptor) feed(c net.Conn) {
	defer a.wg.Done()
	defer c.Close()
	go func() { _, _ = c.Read(make([]byte, 4096)) }() // take the Logon; ends when c closes
	filler := bytes.Repeat([]byte("A"), 64<<10)
	chunk := a.prefix
	for {
		if a.budget.Add(-int64(len(chunk))) < 0 {
			a.sOnce.Do(func() { close(a.spent) })
			_, _ = c.Read(make([]byte, 1)) // hold it open until the client or the test closes it
			return
		}
		if _, err := c.Write(chunk); err != nil {
			a.once.Do(func() { close(a.cut) })
			return
		}
		chunk = filler
	}
}

// sampleHeap starts sampling the heap every 5 ms; the function it returns
// stops and returns the peak growth over the heap at the start (after a GC)
// and the growth still retained after a GC.
func sampleHeap() func() (peak, retained int64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var top atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > top.Load() {
				top.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	return func() (int64, int64) {
		close(stop)
		<-sampled
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(top.Load()) - int64(base), int64(ms.HeapAlloc) - int64(base)
	}
}

// A probe answered with endless bytes after a BeginString (no SOH, so no
// field ever ends) fails at once with ErrMalformedStream, reading a bounded
// amount, instead of buffering until its deadline.
func TestProbeOfHostileAcceptorIsBounded(t *testing.T) {
	const budget, bound = 64 << 20, 32 << 20
	for _, tc := range []struct {
		name, prefix string
		want         error
	}{
		{"BeginString never ends", "8=FIX.4.4", fix.ErrMalformedStream},
		{"BodyLength never ends", "8=FIX.4.4\x019=", fix.ErrMalformedStream},
		{"BodyLength too large", "8=FIX.4.4\x019=99999999\x0135=A\x01", fix.ErrMessageTooLarge},
		{"no CheckSum", "8=FIX.4.4\x019=1000\x0135=A\x01", fix.ErrMalformedStream},
		// quickfix's parser panics on this answer (XmlDataLen past the end).
		{"XmlDataLen past the end", "8=FIX.4.4\x019=12\x0135=A\x01212=99\x0110=000\x01", fix.ErrMalformedStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newHostileAcceptor(t, tc.prefix, budget)
			probe, err := fix.Probe(fix.ProbeOptions{SessionID: quickfix.SessionID{BeginString: "FIX.4.4", SenderCompID: "PROBE", TargetCompID: "BROKER"}})
			if err != nil {
				t.Fatal(err)
			}
			heap := sampleHeap()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			start := time.Now()
			err = probe(ctx, pathdialer.Endpoint{Name: "eu", Services: map[string]string{"fix": a.ln.Addr().String()}})
			took := time.Since(start)
			growth, retained := heap()
			sent := budget - max(a.budget.Load(), 0)
			t.Logf("probe: %v after %v; acceptor sent %.1f MiB; heap growth peak %.1f MiB, retained after GC %.1f MiB",
				err, took.Round(time.Millisecond), float64(sent)/(1<<20), float64(growth)/(1<<20), float64(retained)/(1<<20))
			if growth > bound {
				t.Errorf("heap grew by %.1f MiB under a hostile acceptor (bound %d MiB)", float64(growth)/(1<<20), bound>>20)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), `"eu"`) || len(err.Error()) > 300 {
				t.Errorf("probe error %v; want %v naming the endpoint, in at most 300 bytes", err, tc.want)
			}
		})
	}
}

// An acceptor that sends endless bytes — after a BeginString, a huge
// BodyLength, a BodyLength with no CheckSum, or nothing FIX-like at all — is
// cut by the Initiator: the process's heap stays bounded and the endpoint is
// reported to the Path with an error naming what happened.
func TestHostileAcceptorStreamIsCut(t *testing.T) {
	const budget = 64 << 20 // bytes the acceptor may send in total
	const bound = 32 << 20  // heap growth allowed
	for _, tc := range []struct {
		name, prefix, want string
	}{
		{"BeginString then filler", "8=FIX.4.4\x01", "not a FIX message"},
		{"no BeginString", "", "not a FIX message"},
		{"huge BodyLength", "8=FIX.4.4\x019=99999999\x0135=0\x01", "MaxMessageSize"},
		{"no CheckSum", "8=FIX.4.4\x019=1000\x0135=0\x01", "not a FIX message"},
		// One message whose XmlDataLen (212) points past its end: quickfix's
		// parser panics on it, in its session goroutine (the process dies).
		{"XmlDataLen past the end", "8=FIX.4.4\x019=12\x0135=A\x01212=99\x0110=000\x01", "XmlData"},
		// An empty BodyLength in the body: quickfix's parser panics on it
		// (it reads the empty value's first byte), in its session goroutine.
		{"empty value", "8=FIX.4.4\x019=13\x0135=000000\x019=\x0110=057\x01", "no empty values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newHostileAcceptor(t, tc.prefix, budget)
			events := pathtest.NewEvents()
			cfg := pathtest.FastConfig([]pathdialer.Endpoint{
				{Name: "eu", Region: "eu-west", Primary: true, Services: map[string]string{"fix": a.ln.Addr().String()}},
				{Name: "us", Region: "us-east", Priority: 1, Services: map[string]string{"fix": a.ln.Addr().String()}},
			}, pathtest.NewProbes("eu", "us"))
			cfg.OnEvent = events.Hook
			p := pathtest.Start(t, cfg)

			heap := sampleHeap()

			comp := uniq("HOSTILE")
			st := quickfix.NewSettings()
			s := quickfix.NewSessionSettings()
			s.Set("BeginString", "FIX.4.4")
			s.Set("SenderCompID", comp)
			s.Set("TargetCompID", "BROKER")
			s.Set("HeartBtInt", "30")
			if _, err := st.AddSession(s); err != nil {
				t.Fatal(err)
			}
			in, err := fix.NewInitiator(nopApp{}, quickfix.NewMemoryStoreFactory(), st, logFactory(), p,
				fix.Options{Sequence: fix.SequenceContinue, StopGrace: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()

			var outcome string
			select {
			case <-a.cut:
				outcome = "cut by the client"
			case <-a.spent:
				outcome = "the whole budget was read"
			case <-time.After(60 * time.Second):
				outcome = "neither cut nor spent in 60 s"
			}
			growth, retained := heap()
			sent := budget - max(a.budget.Load(), 0)
			t.Logf("%s: acceptor sent %.1f MiB; heap growth peak %.1f MiB, retained after GC %.1f MiB",
				outcome, float64(sent)/(1<<20), float64(growth)/(1<<20), float64(retained)/(1<<20))
			if growth > bound {
				t.Errorf("heap grew by %.1f MiB under a hostile acceptor (bound %d MiB)", float64(growth)/(1<<20), bound>>20)
			}
			if outcome != "cut by the client" {
				t.Fatalf("the hostile connection was not cut: %s", outcome)
			}
			// The endpoint is reported with an error that names what happened.
			deadline := time.After(10 * time.Second)
			for {
				select {
				case ev := <-events.C():
					if ev.Kind != pathdialer.EventStateChange || ev.Endpoint != "eu" || ev.Err == nil {
						continue
					}
					msg := ev.Err.Error()
					if !strings.Contains(msg, tc.want) || !strings.Contains(msg, `"eu"`) {
						continue
					}
					if !errors.Is(ev.Err, fix.ErrMalformedStream) && !errors.Is(ev.Err, fix.ErrMessageTooLarge) {
						t.Errorf("reported error %q wraps neither ErrMalformedStream nor ErrMessageTooLarge", msg)
					}
					if len(msg) > 300 {
						t.Errorf("reported error is %d bytes long: %q", len(msg), msg)
					}
					t.Logf("reported: %v", msg)
					return
				case <-deadline:
					t.Fatalf("eu was not reported with an error containing %q; snapshot: %+v", tc.want, p.Snapshot())
				}
			}
		})
	}
}
