package fix_test

import (
	"bytes"
	"context"
	"errors"
	"log"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
)

// syncBuffer is an io.Writer safe for the Initiator's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A counterparty's Logout Text of half a MiB holding a line break and a
// forged log line, under slog.Default (whose handler writes the message as
// it is): each logon failure logs one bounded line, the forged line never
// appears on a line of its own, the events' Detail and the halt error stay
// within a few KiB and still name the cause.
func TestLogoutTextIsBoundedAndEscaped(t *testing.T) {
	var out syncBuffer
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(&out)
	log.SetFlags(0)
	t.Cleanup(func() { log.SetOutput(prevOut); log.SetFlags(prevFlags) })

	var mu sync.Mutex
	var evs []fix.Event
	h := newHarness(t, harnessOpts{opts: fix.Options{
		Logger:            slog.Default(),
		LogonFailureLimit: 2,
		LogonBackoff:      pathdialer.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond},
		OnEvent:           func(e fix.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() },
	}})
	forged := "\nINFO order ACCEPTED id=o-1"
	h.b.rejectLogon.Store("Invalid password " + strings.Repeat("P", 512<<10) + forged)
	h.b.relays["eu"].ResetAll()
	eventually(t, 10*time.Second, "logon halt", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs {
			if e.Kind == fix.EventLogonHalted {
				return true
			}
		}
		return false
	})
	err := h.in.SendOrder(context.Background(), order("tb-1", "FILL"), h.sid)
	if !errors.Is(err, fix.ErrLogonHalted) {
		t.Fatalf("SendOrder while halted: %v", err)
	}
	if n := len(err.Error()); n > 4096 || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("halt error of %d bytes: %.200q", n, err.Error())
	}
	mu.Lock()
	for _, e := range evs {
		if len(e.Detail) > 4096 || strings.Contains(e.Detail, "\n") {
			t.Errorf("%v: Detail of %d bytes: %.120q", e.Kind, len(e.Detail), e.Detail)
		}
		if s := e.String(); len(s) > 4096 {
			t.Errorf("%v: String() of %d bytes", e.Kind, len(s))
		}
	}
	mu.Unlock()
	logs := out.String()
	if len(logs) > 64<<10 {
		t.Errorf("logs are %d bytes", len(logs))
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.HasPrefix(line, "INFO order ACCEPTED") {
			t.Errorf("a forged log line: %q", line)
		}
	}
	if !strings.Contains(logs, "logon-failed") {
		t.Errorf("no logon failure logged:\n%.2000s", logs)
	}
}

// A reject's 1 MiB Text with a line break, as FateOf reads it for a
// Settlement's Detail, is escaped and cut; the verdict is unchanged.
func TestFateOfBoundsCounterpartyText(t *testing.T) {
	m := quickfix.NewMessage()
	m.Header.SetString(35, "j")
	m.Body.SetString(380, "1")
	m.Body.SetString(58, strings.Repeat("T", 1<<20)+"\nINFO order ACCEPTED")
	fate, detail := fix.FateOf(m)
	if fate != pathdialer.FateNotReceived {
		t.Errorf("fate %v, want NOT_RECEIVED", fate)
	}
	if len(detail) > 512 || strings.Contains(detail, "\n") || !strings.Contains(detail, "bytes)") {
		t.Errorf("detail of %d bytes: %.120q", len(detail), detail)
	}
}
