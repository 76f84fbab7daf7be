package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strconv"
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
		return Record{Seq: seq, Time: at, Region: region, Trader: trader, Order: trader + "-" + region, Token: tok, Asked: at.Add(-2 * time.Millisecond), Written: at.Add(-time.Millisecond), ValidUntil: at.Add(time.Second), Outcome: "new"}
	}
	clean := []Record{ok(1, "t1", 5, "eu"), ok(2, "t2", 5, "eu"), ok(3, "t1", 9, "us"), ok(4, "t2", 9, "us")}
	refused := ok(5, "t1", 5, "eu")
	refused.Outcome = "rejected-stale-token"
	clean = append(clean, refused)
	stale := ok(6, "t2", 5, "eu") // booked after token 9 was
	expired := ok(7, "t1", 9, "us")
	expired.Asked = expired.ValidUntil.Add(time.Millisecond)
	expired.Written = expired.ValidUntil.Add(2 * time.Millisecond)
	late := ok(11, "t1", 9, "us")
	late.Written = late.ValidUntil.Add(time.Millisecond)
	noDeadline := ok(8, "t2", 9, "us")
	noDeadline.ValidUntil = time.Time{}
	missing := ok(9, "t2", 0, "us")
	missing.Outcome = "rejected-missing-token"
	foreign := ok(10, "", 9, "us")
	for _, c := range []struct {
		name       string
		mode       string
		recs       []Record
		violations int
		want       func(Result) bool
	}{
		{"clean, tokens checked", "checked", clean, 0, func(r Result) bool { return r.Booked == 4 && r.Refused == 1 && r.Switches == 1 }},
		{"clean, tokens off", "off", clean, 0, func(r Result) bool { return r.Booked == 4 && r.Stale == 0 && len(r.Reported) == 0 }},
		{"stale writer booked, tokens checked", "checked", append(clean[:5:5], stale), 1, func(r Result) bool { return r.Stale == 1 }},
		{"stale writer booked, tokens off: reported, not a violation", "off", append(clean[:5:5], stale), 0, func(r Result) bool { return r.Stale == 1 && len(r.Reported) == 1 }},
		{"acquired after the deadline", "off", append(clean[:5:5], expired), 1, func(r Result) bool { return r.Expired == 1 && r.LateWrite == 0 }},
		{"checked before the deadline, written after it: reported", "checked", append(clean[:5:5], late), 0, func(r Result) bool { return r.LateWrite == 1 && len(r.Reported) == 1 }},
		{"acquired without a deadline", "checked", append(clean[:5:5], noDeadline), 1, func(r Result) bool { return r.NoDeadline == 1 }},
		{"order without a token refused", "checked", append(clean[:5:5], missing), 1, func(r Result) bool { return r.Booked == 4 }},
		{"an order no trader wrote", "off", append(clean[:5:5], foreign), 1, func(r Result) bool { return r.Booked == 5 }},
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

// What a trader writes into the client order ID reaches the checker.
func TestFromAuditParsesClientOrderID(t *testing.T) {
	a := time.UnixMicro(1_796_079_848_895_953)
	coid := "trader-2-99999999.a" + strconv.FormatInt(a.UnixMicro(), 36) + ".w139.d-1546396"
	if len(coid) > 64 {
		t.Fatalf("client order ID %q is longer than the broker's 64 characters", coid)
	}
	r := fromAudit(simRecord{Seq: 7, Region: "us", ClientOrderID: coid, Token: 33, Outcome: "new"})
	if r.Trader != "trader-2" || !r.Asked.Equal(a) || !r.Written.Equal(a.Add(139*time.Microsecond)) ||
		!r.ValidUntil.Equal(a.Add(-1546396*time.Microsecond)) || r.Token != 33 || !r.Booked() {
		t.Fatalf("parsed %+v", r)
	}
	if r := fromAudit(simRecord{ClientOrderID: "trader-1-2.a4.w5.dn"}); r.Trader != "trader-1" || !r.ValidUntil.IsZero() {
		t.Fatalf("no deadline: parsed %+v", r)
	}
	for _, id := range []string{"hello-1", "trader-1-2.a!.w5.dn", "a1.w2.d3.x", "trader-1-2.a4.w5.dx"} {
		if r := fromAudit(simRecord{ClientOrderID: id}); r.Trader != "" {
			t.Fatalf("foreign order %q: parsed %+v", id, r)
		}
	}
}

// The short process-level run (make test): both token modes, one iteration of
// each fault kind, three etcd members, the simulated broker (cmd/simbroker,
// built here), observers, deciders and traders each in its own process.
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
