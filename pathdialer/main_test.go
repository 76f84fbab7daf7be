package pathdialer_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a Path starts is stopped by Close: goleak proves that none
// outlive the tests (synctest bubbles already refuse to end with one running).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
