package metrics_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Metrics starts no goroutine; the Paths the tests drive do, and Close must stop
// them all.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
