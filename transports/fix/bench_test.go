package fix_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/transports/fix"
)

func BenchmarkFateOf(b *testing.B) {
	m := quickfix.NewMessage()
	m.Header.SetString(35, "8")
	m.Body.SetString(11, "c1")
	m.Body.SetString(39, "2")
	m.Body.SetString(37, "o1")
	b.ReportAllocs()
	for b.Loop() {
		if f, _ := fix.FateOf(m); f == 0 {
			b.Fatal("undetermined")
		}
	}
}

// BenchmarkSendOrder sends orders through a real quickfix acceptor over
// loopback, at most 64 unanswered at a time; allocs/op includes quickfix's own
// and the answers'. The ticket lives in the order's record (AcquireInto), so
// the gate adds no allocation of its own.
func BenchmarkSendOrder(b *testing.B) {
	h := newHarness(b, harnessOpts{})
	ctx := context.Background()
	var n int
	answered := func() bool { return h.in.Stats().Answered.Load() == uint64(n) }
	b.ReportAllocs()
	for b.Loop() {
		n++
		if err := h.in.SendOrder(ctx, order("bench-"+strconv.Itoa(n), "FILL"), h.sid); err != nil {
			b.Fatal(err)
		}
		if n%64 == 0 {
			eventually(b, 30*time.Second, "every order answered", answered)
		}
	}
	b.StopTimer()
	eventually(b, 30*time.Second, "every order answered", answered)
}
