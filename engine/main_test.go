package engine_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The engine starts no goroutines; goleak proves that none outlive the tests
// (including the ones the tests start around blocked probes).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
