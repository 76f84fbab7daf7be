package main

import (
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "serve" { // the child this test binary starts
		serve()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// One short round of two cells, so the measurement does not rot: the child
// starts, both transports reach it, and the table is built.
func TestOneShortRound(t *testing.T) {
	if err := run(1, 50*time.Millisecond, "GET read, 1 "); err != nil {
		t.Fatal(err)
	}
}
