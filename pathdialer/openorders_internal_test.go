package pathdialer

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/venue"
)

// A cancel is attributed to the switch that caused it. Connection scope:
// the first fence of the order's endpoint after it was placed. Profile
// scope: the first fence whose cancel could still come after the order was
// placed (a late cancel of a fence before the release it was placed under
// counts; one due before that release does not).
func TestCODFenceNamesTheSwitchThatCausedIt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// us left at 0 (its cancel due at 4.5 s), flow released on eu under
	// token 2 at 0.5 s; eu left at 8 s, released on us under 3 at 8.5 s.
	fences := []ooFence{
		{from: "us", to: "eu", token: 2, fencedAt: at(0), due: at(4500), released: at(500)},
		{from: "eu", to: "us", token: 3, fencedAt: at(8000), due: at(12500), released: at(8500)},
	}
	for _, c := range []struct {
		name  string
		eff   venue.SwitchEffect
		o     OpenOrder
		from  string
		reach bool
	}{
		{"profile: placed on us before both", venue.EffectAllOrders, OpenOrder{Endpoint: "us", Token: 1}, "us", true},
		{"profile: placed on eu while us's late cancel was due", venue.EffectAllOrders, OpenOrder{Endpoint: "eu", Token: 2}, "us", true},
		{"profile: placed on us after us's cancel was due: eu's late cancel", venue.EffectAllOrders, OpenOrder{Endpoint: "us", Token: 3}, "eu", true},
		{"profile: token unknown", venue.EffectAllOrders, OpenOrder{Endpoint: "eu"}, "us", true},
		{"connection: placed on eu after the first", venue.EffectOldPathOrders, OpenOrder{Endpoint: "eu", Token: 2}, "eu", true},
		{"connection: placed on us before both", venue.EffectOldPathOrders, OpenOrder{Endpoint: "us", Token: 1}, "us", true},
		{"connection: placed on us after both: nothing reaches it; eu's cancel was still due", venue.EffectOldPathOrders, OpenOrder{Endpoint: "us", Token: 3}, "eu", false},
		{"preserve: the first fence whose cancel could come after it, not reaching", venue.EffectNone, OpenOrder{Endpoint: "eu", Token: 2}, "us", false},
		{"preserve: sent after us's cancel was due", venue.EffectNone, OpenOrder{Endpoint: "us", Token: 2, Placed: at(5000)}, "eu", false},
		{"profile: sent at 5 s, after us's cancel was due", venue.EffectAllOrders, OpenOrder{Endpoint: "eu", Token: 2, Placed: at(5000)}, "eu", true},
		{"profile: sent at 4 s, us's cancel still due", venue.EffectAllOrders, OpenOrder{Endpoint: "eu", Token: 2, Placed: at(4000)}, "us", true},
	} {
		f, reach := codFence(c.eff, c.o, fences)
		if f.from != c.from || reach != c.reach {
			t.Errorf("%s: fence of %s (reaches %v), want %s (%v)", c.name, f.from, reach, c.from, c.reach)
		}
	}
}
