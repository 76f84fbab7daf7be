package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
)

// TestMain runs a role when the harness started this test binary as one of
// its processes.
func TestMain(m *testing.M) {
	if os.Getenv(ChildEnv) == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	goleak.VerifyTestMain(m, etcdtest.IgnoredGoroutines...)
}

// The checker's teeth: each kind of violation planted in an audit is caught,
// and a clean audit passes.
func TestCheckCatchesPlantedViolations(t *testing.T) {
	t0 := time.Now()
	ok := func(seq int, trader string, tok uint64, region string) Record {
		at := t0.Add(time.Duration(seq) * time.Millisecond)
		return Record{Seq: seq, Time: at, Region: region, Trader: trader, Order: trader + "-" + region, Token: tok, Granted: at.Add(-time.Millisecond), ValidUntil: at.Add(time.Second), Accepted: true}
	}
	clean := []Record{ok(1, "t1", 5, "eu"), ok(2, "t2", 5, "eu"), ok(3, "t1", 9, "us"), ok(4, "t2", 9, "us")}
	refused := ok(5, "t1", 5, "eu")
	refused.Accepted, refused.Reason = false, "stale token 5 < 9"
	clean = append(clean, refused)
	stale := ok(6, "t2", 5, "eu") // booked after token 9 was
	expired := ok(7, "t1", 9, "us")
	expired.Granted = expired.ValidUntil.Add(time.Millisecond)
	noDeadline := ok(8, "t2", 9, "us")
	noDeadline.ValidUntil = time.Time{}
	for _, c := range []struct {
		name       string
		mode       string
		recs       []Record
		violations int
		want       func(Result) bool
	}{
		{"clean, tokens checked", "checked", clean, 0, func(r Result) bool { return r.Booked == 4 && r.Refused == 1 && r.Switches == 1 }},
		{"clean, tokens off", "off", clean, 0, func(r Result) bool { return r.Booked == 4 && r.Stale == 0 }},
		{"stale writer booked, tokens checked", "checked", append(clean[:5:5], stale), 1, func(r Result) bool { return r.Stale == 1 }},
		{"stale writer booked, tokens off: reported, not a violation", "off", append(clean[:5:5], stale), 0, func(r Result) bool { return r.Stale == 1 }},
		{"granted after the deadline", "off", append(clean[:5:5], expired), 1, func(r Result) bool { return r.Expired == 1 }},
		{"granted without a deadline", "checked", append(clean[:5:5], noDeadline), 1, func(r Result) bool { return r.NoDeadline == 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Result{Mode: c.mode, Faults: map[string]int{}}
			check(&res, append([]Record(nil), c.recs...))
			if len(res.Violations) != c.violations || !c.want(res) {
				t.Fatalf("result %+v, want %d violation(s)", res, c.violations)
			}
			var out bytes.Buffer
			if pass := printTable(&out, []Result{res}); pass != (c.violations == 0) {
				t.Fatalf("table verdict %v for %d violation(s):\n%s", pass, c.violations, out.String())
			}
		})
	}
}

// The short process-level run (make test): both token modes, one iteration of
// each fault kind, three etcd members, the broker, observers, deciders and
// traders each in its own process.
func TestProcessLevelShort(t *testing.T) {
	o := opts{prefix: "/brokerpath/jepsen/", ttl: time.Second, iterations: 4, seed: 1, modes: "checked,off", workDir: t.TempDir()}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ok, err := run(ctx, o, &out)
	http.DefaultClient.CloseIdleConnections()
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("violations or unrecovered faults; see the table")
	}
	for _, want := range []string{"checked", "off", "1/1/1/1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}
