// Command splitgate writes a go build overlay that re-introduces, in
// pathdialer's gate, the non-atomic in-flight→unknown hand-over the gate once
// had: Ticket.Unknown takes the ticket out of its shard and releases the
// shard's lock before it appends the ticket to the unknown list, so a switch
// that takes the tickets in between finds it in neither. Nothing in the
// module changes; only a build given -overlay sees the defect:
//
//	go run ./internal/dst/splitgate -gap=gosched -out=/tmp/split
//	go test -overlay=/tmp/split/overlay.json ./internal/dst -run 'TestSimSeeds$' -args -sim.seeds=1000
//
// -gap puts something between the two steps: none (the defect as it was),
// gosched (the goroutine yields, as a preempted one would) or a duration
// (a pause of that much virtual time, as a descheduled thread or a GC stop).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const atomicHandOver = `		s.unlink(t)
		t.p.addUnknown(t)
		s.mu.Unlock()
		t.p.inflightFinished()
		return`

func main() {
	gate := flag.String("gate", "pathdialer/gate.go", "pathdialer's gate.go")
	out := flag.String("out", "", "directory for the patched gate.go and overlay.json")
	gap := flag.String("gap", "none", "between the two steps: none, gosched, or a duration")
	flag.Parse()
	if *out == "" {
		fail("splitgate: -out is required")
	}
	src, err := os.ReadFile(*gate)
	if err != nil {
		fail("splitgate: %v", err)
	}
	if strings.Count(string(src), atomicHandOver) != 1 {
		fail("splitgate: %s no longer has the atomic hand-over this tool splits (Ticket.Unknown changed): update the tool", *gate)
	}
	between := ""
	switch *gap {
	case "none":
	case "gosched":
		between = "\t\truntime.Gosched()\n"
	default:
		d, err := time.ParseDuration(*gap)
		if err != nil || d <= 0 {
			fail("splitgate: -gap %q: want none, gosched or a positive duration", *gap)
		}
		between = fmt.Sprintf("\t\ttime.Sleep(%d)\n", int64(d))
	}
	split := "\t\ts.unlink(t)\n\t\ts.mu.Unlock() // DEFECT (splitgate): out of the shard, not yet among the unknown\n" + between +
		"\t\tt.p.addUnknown(t)\n\t\tt.p.inflightFinished()\n\t\treturn"
	patched := strings.Replace(string(src), atomicHandOver, split, 1)
	if *gap == "gosched" {
		patched = strings.Replace(patched, "import (\n", "import (\n\t\"runtime\"\n", 1)
	}
	abs, err := filepath.Abs(*gate)
	if err != nil {
		fail("splitgate: %v", err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail("splitgate: %v", err)
	}
	dst := filepath.Join(*out, "gate.go")
	if err := os.WriteFile(dst, []byte(patched), 0o644); err != nil {
		fail("splitgate: %v", err)
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: dst}})
	if err := os.WriteFile(filepath.Join(*out, "overlay.json"), ov, 0o644); err != nil {
		fail("splitgate: %v", err)
	}
	fmt.Println(filepath.Join(*out, "overlay.json"))
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(2)
}
