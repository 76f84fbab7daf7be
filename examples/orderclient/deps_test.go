package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The demo builds only what it runs: quickfix's generated field, enum and
// FIX 4.4 message packages (1.5 MB of generated code, the longest compile of
// a cold `go run ./examples/orderclient`) are not among its dependencies.
func TestDemoLeavesOutGeneratedFIXPackages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, heavy := range []string{"github.com/quickfixgo/field", "github.com/quickfixgo/enum", "github.com/quickfixgo/fix44"} {
			if p == heavy || strings.HasPrefix(p, heavy+"/") {
				t.Errorf("the demo depends on %s", p)
			}
		}
	}
}
