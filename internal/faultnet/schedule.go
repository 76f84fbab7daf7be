package faultnet

import (
	"fmt"
	"sync"
	"time"
)

// Setter is anything whose fault can be switched; *Relay is one.
type Setter interface {
	SetFault(Fault) error
}

// Step is one entry of a Schedule: apply Fault, then wait For.
type Step struct {
	Fault Fault
	For   time.Duration
}

// Schedule applies a list of faults to a Setter on a timer, from its own
// goroutine. Stop ends it; Stop leaves the Setter in whatever fault the
// schedule applied last (set None yourself to heal).
type Schedule struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu  sync.Mutex
	err error
}

// Run starts a schedule that applies steps in order, each for its duration,
// and repeats from the first step if loop is set. The first step is applied
// before Run returns. A non-looping schedule ends after the last step's
// duration; the last fault stays in force.
func Run(target Setter, steps []Step, loop bool) (*Schedule, error) {
	if target == nil {
		return nil, fmt.Errorf("%w: schedule target is nil", ErrInvalidConfig)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%w: schedule has no steps", ErrInvalidConfig)
	}
	for i, st := range steps {
		if err := st.Fault.Validate(); err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		if st.For <= 0 {
			return nil, fmt.Errorf("%w: step %d: For %v must be positive", ErrInvalidConfig, i, st.For)
		}
	}
	s := &Schedule{stop: make(chan struct{}), done: make(chan struct{})}
	s.record(target.SetFault(steps[0].Fault))
	steps = append([]Step(nil), steps...)
	go s.run(target, steps, loop)
	return s, nil
}

// Flap alternates f (for period) and None (for period), starting with f,
// until stopped.
func Flap(target Setter, f Fault, period time.Duration) (*Schedule, error) {
	return Run(target, []Step{{Fault: f, For: period}, {Fault: None(), For: period}}, true)
}

func (s *Schedule) run(target Setter, steps []Step, loop bool) {
	defer close(s.done)
	i := 0
	for {
		t := time.NewTimer(steps[i].For)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
		}
		i++
		if i == len(steps) {
			if !loop {
				return
			}
			i = 0
		}
		s.record(target.SetFault(steps[i].Fault))
	}
}

func (s *Schedule) record(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// Stop ends the schedule and waits for its goroutine. It is idempotent.
func (s *Schedule) Stop() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

// Done is closed when the schedule has ended (finished or stopped).
func (s *Schedule) Done() <-chan struct{} { return s.done }

// Err returns the first error the target returned, if any.
func (s *Schedule) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
