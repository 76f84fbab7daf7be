package drillkit_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerpath/brokerpath/internal/drillkit"
	"github.com/brokerpath/brokerpath/observe/drill"
	"github.com/brokerpath/brokerpath/transports/ws"
)

func TestSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		s := drillkit.StartSampler(t.Context(), 100*time.Millisecond, drillkit.Sources{
			Reads:  func() (int, int) { n++; return n, 0 },
			Broker: func() map[string]drill.RegionWS { return map[string]drill.RegionWS{"us": {Handshakes: uint64(n)}} },
		})
		<-time.After(350 * time.Millisecond)
		got := s.Stop()
		if len(got) != 5 { // at start, +100, +200, +300, at Stop
			t.Fatalf("%d samples", len(got))
		}
		if got[1].Time.Sub(got[0].Time) != 100*time.Millisecond || got[4].ReadsOK != 5 || got[4].Connected != nil {
			t.Errorf("samples %+v", got)
		}
		if again := s.Stop(); len(again) != 5 {
			t.Error("Stop not idempotent")
		}
	})
}

func TestNewPopulationRefuses(t *testing.T) {
	if _, err := drillkit.NewPopulation(nil, 3, ws.DefaultStreamConfig()); !errors.Is(err, drillkit.ErrInvalidPopulation) {
		t.Errorf("nil path: %v", err)
	}
}
