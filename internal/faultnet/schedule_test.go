package faultnet

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is a Setter that records when each fault was applied.
type recorder struct {
	mu    sync.Mutex
	start time.Time
	got   []string
	err   error
}

func (r *recorder) SetFault(f Fault) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, f.Kind.String()+"@"+time.Since(r.start).String())
	return r.err
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFlapAlternatesOnTimerUntilStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{start: time.Now()}
		s, err := Flap(rec, Down(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		<-time.After(7 * time.Second)
		synctest.Wait()
		want := []string{"down@0s", "none@2s", "down@4s", "none@6s"}
		if got := rec.list(); !equal(got, want) {
			t.Fatalf("flap applied %v, want %v", got, want)
		}
		s.Stop()
		s.Stop() // idempotent
		<-time.After(10 * time.Second)
		if got := rec.list(); len(got) != len(want) {
			t.Fatalf("schedule kept running after Stop: %v", got)
		}
		select {
		case <-s.Done():
		default:
			t.Fatal("Done not closed after Stop")
		}
	})
}

func TestRunOnceEndsAndReportsErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		rec := &recorder{start: time.Now(), err: boom}
		s, err := Run(rec, []Step{
			{Fault: Blackhole(), For: time.Second},
			{Fault: Latency(time.Millisecond, 0), For: 3 * time.Second},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		<-s.Done()
		want := []string{"blackhole@0s", "latency@1s"}
		if got := rec.list(); !equal(got, want) {
			t.Fatalf("applied %v, want %v", got, want)
		}
		if elapsed := time.Since(rec.start); elapsed != 4*time.Second {
			t.Fatalf("schedule ended after %v, want 4s", elapsed)
		}
		if !errors.Is(s.Err(), boom) {
			t.Fatalf("Err = %v, want boom", s.Err())
		}
		s.Stop() // after completion: returns at once
	})
}

func TestRunValidates(t *testing.T) {
	rec := &recorder{}
	cases := []struct {
		name   string
		target Setter
		steps  []Step
		want   error
	}{
		{"nil target", nil, []Step{{Fault: None(), For: time.Second}}, ErrInvalidConfig},
		{"no steps", rec, nil, ErrInvalidConfig},
		{"zero duration", rec, []Step{{Fault: None()}}, ErrInvalidConfig},
		{"bad fault", rec, []Step{{Fault: Fault{Kind: 77}, For: time.Second}}, ErrInvalidFault},
	}
	for _, tc := range cases {
		if _, err := Run(tc.target, tc.steps, true); !errors.Is(err, tc.want) {
			t.Errorf("%s: Run = %v, want %v", tc.name, err, tc.want)
		}
	}
	if len(rec.list()) != 0 {
		t.Fatal("invalid schedule touched the target")
	}
}
