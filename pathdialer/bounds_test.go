package pathdialer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// lockedBuffer collects a logger's output from the Path's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var errStatus = errors.New("order status lookup")

// A reconciler that relays a counterparty's 1 MiB text (an error holding a
// forged log line, a settlement's detail and cause) cannot inflate events,
// the Snapshot or the logs: each text is cut to a few hundred bytes with a
// note of its length, control characters are escaped, and the error still
// unwraps to what the reconciler returned.
func TestCounterpartyTextIsBoundedAndEscaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const mib = 1 << 20
		huge := strings.Repeat("S", mib)
		forged := "rejected\n" + `time=2026-01-01T00:00:00Z level=INFO msg="order ACCEPTED" id=o-1`
		var logs lockedBuffer
		fails := 2
		var mu sync.Mutex
		var returned []pathdialer.Settlement // what the reconciler handed over, to check it is not changed
		h := newHarness(t, func(c *pathdialer.Config) {
			c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			c.Reconcile = func(ctx context.Context, r pathdialer.Reconciliation) ([]pathdialer.Settlement, error) {
				mu.Lock()
				defer mu.Unlock()
				if fails > 0 {
					fails--
					if fails == 1 {
						return nil, fmt.Errorf("%w: status %q", errStatus, huge)
					}
					return nil, fmt.Errorf("%w: %s", errStatus, forged)
				}
				var out []pathdialer.Settlement
				for _, tk := range r.Tickets {
					out = append(out, pathdialer.Settlement{OrderID: tk.OrderID, Service: tk.Service,
						Fate: pathdialer.FateNotReceived, Detail: huge + forged})
				}
				returned = out
				return out, nil
			}
		})
		defer h.close()
		h.start()
		tk := mustAcquire(t, h.p, "o-1")
		h.probes.set("eu", probeBlackhole)
		h.await(pathdialer.EventSwitch, nil)
		tk.Unknown(errors.New("cut after write: " + huge))
		h.await(pathdialer.EventRelease, nil)
		synctest.Wait()

		mu.Lock()
		for _, s := range returned {
			if s.Detail != huge+forged {
				t.Errorf("the reconciler's own settlement was changed: detail of %d bytes", len(s.Detail))
			}
		}
		mu.Unlock()
		failures, largest := 0, 0
		for _, e := range h.rec.all() {
			if js, err := json.Marshal(e); err == nil {
				largest = max(largest, len(js))
			}
			if n := len(e.Error) + len(e.Cause); n > 2*2048 {
				t.Errorf("%v: Error+Cause are %d bytes", e.Kind, n)
			}
			if e.Err != nil && len(e.Err.Error()) > 2048 {
				t.Errorf("%v: Err.Error() is %d bytes", e.Kind, len(e.Err.Error()))
			}
			if strings.Contains(e.Error, "\n") || strings.Contains(e.Cause, "\n") {
				t.Errorf("%v: a raw newline in %q", e.Kind, e.Error+e.Cause)
			}
			for _, s := range e.Settlements {
				if len(s.Detail) > 512 || strings.Contains(s.Detail, "\n") {
					t.Errorf("%v: settlement detail of %d bytes: %.80q", e.Kind, len(s.Detail), s.Detail)
				}
			}
			for _, ti := range e.Tickets {
				if ti.Cause != nil && len(ti.Cause.Error()) > 512 {
					t.Errorf("%v: ticket cause of %d bytes", e.Kind, len(ti.Cause.Error()))
				}
			}
			if e.Kind == pathdialer.EventReconcileFailure {
				failures++
				if !errors.Is(e.Err, errStatus) {
					t.Errorf("reconcile-failed: errors.Is lost the reconciler's error: %v", e.Err)
				}
				if len(e.Error) >= 2000 && !strings.Contains(e.Error, "bytes)") {
					t.Errorf("reconcile-failed: cut without a length note: %.80q", e.Error)
				}
			}
		}
		if failures != 2 {
			t.Fatalf("%d reconcile failures, want 2", failures)
		}
		js, err := json.Marshal(h.p.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		if len(js) > 64<<10 {
			t.Errorf("Snapshot JSON is %d bytes", len(js))
		}
		out := logs.String()
		t.Logf("largest event %d bytes (JSON), Snapshot %d bytes, logs %d bytes", largest, len(js), len(out))
		if len(out) > 64<<10 {
			t.Errorf("logs are %d bytes", len(out))
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "time=2026-01-01") {
				t.Errorf("a forged log line: %q", line)
			}
		}
	})
}
