package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The quick start runs against the simulated broker: one order booked over
// REST and one over FIX, each exactly once, through the primary region, and a
// live tick read from the stream.
func TestQuickStartRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := simulated(ctx, func(sim *simbroker.Broker, b Broker) error {
		if err := run(ctx, b, &out); err != nil {
			return err
		}
		for id, service := range map[string]string{"quickstart-rest-1": "rest", "quickstart-fix-1": "fix"} {
			o, ok := sim.Order(id)
			if !ok {
				t.Errorf("the broker has no order %s", id)
				continue
			}
			if o.Status != "filled" || o.Region != "eu" || o.Service != service {
				t.Errorf("order %s: status %q region %q service %q, want filled through eu over %s", id, o.Status, o.Region, o.Service, service)
			}
		}
		if n := len(sim.Book()); n != 2 {
			t.Errorf("the broker booked %d orders, want 2", n)
		}
		if d := sim.Audit().Duplicates(); len(d) != 0 {
			t.Errorf("duplicate bookings: %v", d)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("quick start: %v\noutput:\n%s", err, out.String())
	}
	want := regexp.MustCompile(`^REST order quickstart-rest-1: filled in eu
FIX order quickstart-fix-1: filled
px\.EURUSD \d+\.\d+ \(tick #[1-9]\d* from eu\)
trading through eu
$`)
	if !want.MatchString(out.String()) {
		t.Errorf("output:\n%s\nwant it to match:\n%s", out.String(), want)
	}
}

// readmeMarker precedes the README's quick start block.
const readmeMarker = "<!-- quick start: examples/quickstart/quickstart.go -->"

// The README's quick start is this package's quickstart.go, byte for byte
// (what the test above runs is what a reader copies).
func TestREADMEShowsQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("quickstart.go")
	if err != nil {
		t.Fatal(err)
	}
	block, err := quickStartBlock(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if block != string(src) {
		t.Errorf("README.md's quick start differs from examples/quickstart/quickstart.go:\n%s\n"+
			"copy the file into the README block after %q", firstDiff(block, string(src)), readmeMarker)
	}
}

// quickStartBlock returns the ```go block that follows the marker.
func quickStartBlock(readme string) (string, error) {
	_, after, ok := strings.Cut(readme, readmeMarker+"\n```go\n")
	if !ok {
		return "", fmt.Errorf("README.md has no %q line followed by a ```go block", readmeMarker)
	}
	block, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		return "", fmt.Errorf("README.md's quick start block is not closed")
	}
	return block + "\n", nil
}

// firstDiff names the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  README: %q\n  file:   %q", i+1, x, y)
		}
	}
	return "trailing newline"
}
