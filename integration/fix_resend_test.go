package integration_test

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/orderflow"
)

// The FIX reconcile never gets its status answers in time, so the client
// settles the FIX orders through its own REST book lookup (not the
// Initiator's reconciler). The re-send that Path.MayResend grants for a final
// NOT_RECEIVED must still go out: before, the Initiator kept its stale record
// and refused it "ClOrdID already in flight" for ever (orders left pending).
func TestFIXResendAfterAnotherReconcilerSettledIt(t *testing.T) {
	sc := scenario(t, "blackhole")
	sc.Failback = orderflow.May
	sc.Halt = orderflow.May
	runScenario(t, sc, envOptions{tune: func(tm *orderflow.Timing, _ budget) {
		tm.FIXAnswerTimeout = time.Millisecond
	}}, failedOver)
}
