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

// simulated describes a running simulated broker as a Broker.
func simulated(t *testing.T, sim *simbroker.Broker) Broker {
	b := Broker{RootCAs: sim.CertPool(), APIKey: sim.APIKey(), FIX: sim.FIXSessionID(), FIXStore: t.TempDir(), Stream: "px.EURUSD"}
	for _, r := range sim.Regions() {
		b.Regions = append(b.Regions, Region{Name: r.Name(), REST: r.RESTURL(), WS: r.WSURL(), FIX: r.FIXAddr()})
	}
	return b
}

var outputRE = regexp.MustCompile(`^REST order (qs-[a-z0-9]{10})-rest: filled in eu
FIX order (qs-[a-z0-9]{10})-fix: filled
px\.EURUSD \d+\.\d+ \(tick #[1-9]\d* from eu\)
trading through eu
$`)

// checkOutput returns the client order IDs one run's output names.
func checkOutput(t *testing.T, out string) []string {
	t.Helper()
	m := outputRE.FindStringSubmatch(out)
	if m == nil || m[1] != m[2] {
		t.Fatalf("output:\n%s\nwant it to match:\n%s", out, outputRE)
	}
	return []string{m[1] + "-rest", m[1] + "-fix"}
}

// The quick start runs against the simulated broker, twice in a row: each
// run books one order over REST and one over FIX, each exactly once, through
// the primary region, under client order IDs of its own, and reads a live
// tick from the stream.
func TestQuickStartRunsTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sim, err := simbroker.Start(ctx, simbroker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	b := simulated(t, sim)
	want := map[string]string{}
	for range 2 {
		var out bytes.Buffer
		if err := run(ctx, b, &out); err != nil {
			t.Fatalf("quick start: %v\noutput:\n%s", err, out.String())
		}
		ids := checkOutput(t, out.String())
		want[ids[0]], want[ids[1]] = "rest", "fix"
	}
	if len(want) != 4 {
		t.Fatalf("the two runs used the client order IDs %v, want four different ones", want)
	}
	for id, service := range want {
		o, ok := sim.Order(id)
		if !ok {
			t.Errorf("the broker has no order %s", id)
			continue
		}
		if o.Status != "filled" || o.Region != "eu" || o.Service != service {
			t.Errorf("order %s: status %q region %q service %q, want filled through eu over %s", id, o.Status, o.Region, o.Service, service)
		}
	}
	if n := len(sim.Book()); n != 4 {
		t.Errorf("the broker booked %d orders, want 4", n)
	}
	if d := sim.Audit().Duplicates(); len(d) != 0 {
		t.Errorf("duplicate bookings: %v", d)
	}
}

// Without a broker the quick start says what to set, and where to get it.
func TestQuickStartWithoutBrokerSaysWhatToSet(t *testing.T) {
	for _, k := range []string{"BROKER_REGIONS", "BROKER_API_KEY", "BROKER_FIX_SENDER", "BROKER_FIX_TARGET", "BROKER_CA_FILE"} {
		t.Setenv(k, "")
	}
	for _, tc := range []struct {
		args []string
		want string
		hint bool // names where the simulated broker's values come from
	}{
		{nil, "BROKER_REGIONS", true},
		{[]string{"-regions", "eu=https://127.0.0.1:1,wss://127.0.0.1:2/ws"}, "want name=REST-URL,WS-URL,FIX-host:port", false},
		{[]string{"-regions", "eu=https://127.0.0.1:1,wss://127.0.0.1:2/ws,127.0.0.1:3"}, "BROKER_API_KEY", true},
	} {
		_, err := brokerFromFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("brokerFromFlags(%q) = %v, want an error naming %s", tc.args, err, tc.want)
		} else if tc.hint && !strings.Contains(err.Error(), "go run ./cmd/simbroker") {
			t.Errorf("brokerFromFlags(%q) = %v, does not say where a broker comes from", tc.args, err)
		}
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
