package pathdialer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// answer is how rejectingProbes answers one probe of an endpoint.
type answer int

const (
	answerOK         answer = iota
	answerRejected          // ErrProbeRejected, naming an HTTP status
	answerReset             // a transient failure
	answerBlackhole         // no answer until the probe's context ends
	answerLateReject        // a rejection once the probe's context ended: a timeout
)

// rejectingProbes answers each endpoint's probes from a script: the n-th
// probe of an endpoint gets script[n], the last entry repeating. status names
// the HTTP status a rejection quotes. Safe for concurrent use.
type rejectingProbes struct {
	mu     sync.Mutex
	script map[string][]answer
	status map[string]int
	calls  map[string]int
}

func newRejectingProbes(script map[string][]answer, status map[string]int) *rejectingProbes {
	return &rejectingProbes{script: script, status: status, calls: map[string]int{}}
}

func (r *rejectingProbes) set(name string, a answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.script[name] = []answer{a}
	r.calls[name] = 0
}

func (r *rejectingProbes) probe(ctx context.Context, ep pathdialer.Endpoint) error {
	r.mu.Lock()
	s := r.script[ep.Name]
	a := s[min(r.calls[ep.Name], len(s)-1)]
	r.calls[ep.Name]++
	status := r.status[ep.Name]
	r.mu.Unlock()
	switch a {
	case answerRejected:
		return fmt.Errorf("probe of %q answered HTTP %d to GET /v1/account: %w", ep.Name, status, pathdialer.ErrProbeRejected)
	case answerReset:
		return errReset
	case answerBlackhole:
		<-ctx.Done()
		return ctx.Err()
	case answerLateReject:
		<-ctx.Done()
		return fmt.Errorf("probe of %q answered HTTP %d too late: %w", ep.Name, status, pathdialer.ErrProbeRejected)
	}
	return nil
}

// A probe answer that proves the probe's request wrong (a refused credential,
// a path the server does not have), from every endpoint, fails Start within
// the probe round that brought the last of them, not after StartWait; the
// error names each endpoint and its answer. The Path runs on halted and
// resumes once an endpoint answers well (the key was activated late).
func TestStartFailsFastWhenEveryProbeIsRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr := newRejectingProbes(map[string][]answer{"eu": {answerRejected}, "us": {answerRejected}}, map[string]int{"eu": 401, "us": 403})
		h := newHarness(t, func(c *pathdialer.Config) { c.Probe = pr.probe })
		defer h.close()
		start := time.Now()
		err := h.p.Start(context.Background())
		d := time.Since(start)
		if !errors.Is(err, pathdialer.ErrProbeRejected) || !errors.Is(err, pathdialer.ErrNoEligibleEndpoint) {
			t.Fatalf("Start: %v; want an error wrapping ErrProbeRejected and ErrNoEligibleEndpoint", err)
		}
		t.Logf("Start: %v", err)
		for _, want := range []string{`"eu"`, `"us"`, "HTTP 401", "HTTP 403"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("Start's error does not name %s: %v", want, err)
			}
		}
		if limit := baseConfig().ProbeTimeout + time.Millisecond; d > limit {
			t.Fatalf("Start returned after %v, want within one probe round (<= %v), not the %v StartWait", d, limit, baseConfig().StartWait)
		}
		if st, _ := h.p.GateState(); st != pathdialer.GateHalted {
			t.Fatalf("gate %v, want halted", st)
		}
		if e := h.await(pathdialer.EventHalt, nil); !strings.Contains(e.Cause, "rejected") || !strings.Contains(e.Cause, "HTTP 401") {
			t.Fatalf("halt event does not name the cause: %v", e)
		}
		pr.set("eu", answerOK)
		h.await(pathdialer.EventRelease, nil)
		if tk := mustAcquire(t, h.p, "o-1"); tk.Endpoint != "eu" {
			t.Fatalf("ticket on %q, want eu", tk.Endpoint)
		}
	})
}

// Start fails fast only on an answer from every endpoint: while one is
// pending (a probe that timed out, even one that then returned a rejection)
// Start keeps probing; while one fails in a way a sound configuration also
// meets (a reset) Start waits StartWait as ever; one endpoint that answers
// well is started on.
func TestStartWaitsUnlessEveryProbeIsRejected(t *testing.T) {
	cfg := baseConfig()
	round := cfg.ProbeTimeout + cfg.ProbeInterval // a timed-out round, then the wait for the next
	for name, tc := range map[string]struct {
		script       map[string][]answer
		wantRejected bool // Start's error wraps ErrProbeRejected
		wantErr      bool
		min, max     time.Duration // Start returns within [min, max]
	}{
		"one pending, then rejected": {
			script:       map[string][]answer{"eu": {answerRejected}, "us": {answerBlackhole, answerRejected}},
			wantRejected: true, wantErr: true, min: round, max: round + time.Millisecond,
		},
		"one rejected, one reset": {
			script:  map[string][]answer{"eu": {answerRejected}, "us": {answerReset}},
			wantErr: true, min: cfg.StartWait, max: cfg.StartWait + cfg.ProbeInterval,
		},
		"rejections that came after the probe timed out": {
			script:  map[string][]answer{"eu": {answerLateReject}, "us": {answerLateReject}},
			wantErr: true, min: cfg.StartWait, max: cfg.StartWait + round,
		},
		"one rejected, one healthy": {
			script: map[string][]answer{"eu": {answerRejected}, "us": {answerOK}},
			min:    0, max: 0,
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pr := newRejectingProbes(tc.script, map[string]int{"eu": 401, "us": 401})
				h := newHarness(t, func(c *pathdialer.Config) { c.Probe = pr.probe })
				defer h.close()
				start := time.Now()
				err := h.p.Start(context.Background())
				d := time.Since(start)
				if (err != nil) != tc.wantErr || errors.Is(err, pathdialer.ErrProbeRejected) != tc.wantRejected {
					t.Fatalf("Start: %v; want an error: %v, wrapping ErrProbeRejected: %v", err, tc.wantErr, tc.wantRejected)
				}
				if d < tc.min || d > tc.max {
					t.Fatalf("Start returned after %v, want within [%v, %v]", d, tc.min, tc.max)
				}
				if tc.wantErr {
					return
				}
				// eu, the primary, refuses the key; orders go to us once it is DOWN.
				h.await(pathdialer.EventRelease, func(e pathdialer.Event) bool { return e.Endpoint == "us" })
				if tk := mustAcquire(t, h.p, "o-1"); tk.Endpoint != "us" {
					t.Fatalf("ticket on %q, want us", tk.Endpoint)
				}
			})
		})
	}
}
