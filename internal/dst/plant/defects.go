package main

// defects are the defects plant knows, by name. Each re-plants a defect the
// runtime once had (or a variant of it); make sim-plant DEFECT=name sweeps
// the simulation against it and succeeds when a seed breaks its Invariant.
//
// To add one: name the file and the function (Func: the whole declaration as
// it was, in Body) or a region between marker comments (Marker), or an exact
// text (Old); give the invariant the sweep must break and whether it needs
// the composed moves; go run ./internal/dst/plant -check verifies that every
// defect still applies to the tree.
var defects = map[string]Defect{
	// The gate's in-flight→unknown hand-over in two steps (as splitgate
	// plants it): Ticket.Unknown takes the ticket out of its shard and
	// releases the shard's lock before it appends the ticket to the unknown
	// list, so a switch that takes the tickets in between finds it in
	// neither.
	"split-gate": {
		File:      "pathdialer/gate.go",
		Doc:       "Ticket.Unknown hands a ticket from in flight to unknown in two steps ({{gap}} between them)",
		Invariant: "unknown-settled-before-release",
		Old: `		s.unlink(t)
		t.p.addUnknown(t)
		s.mu.Unlock()
		t.p.inflightFinished()
		return`,
		Body: `		s.unlink(t)
		s.mu.Unlock() // DEFECT (plant split-gate): out of the shard, not yet among the unknown
		{{gap}}
		t.p.addUnknown(t)
		t.p.inflightFinished()
		return`,
	},
	// An on-demand probe that waits for a round's running probe re-evaluates
	// before that probe's result is recorded: the probe's slot is released
	// ({{gap}}) before its result is delivered to the round, which records it.
	// Written against pathdialer/monitor.go as it was before the fix; after
	// the fix, re-plant it as the fix's inverse.
	"probe-result-after-slot": {
		File:      "pathdialer/monitor.go",
		Doc:       "the probe slot is released, then ({{gap}}) the result is delivered and recorded",
		Invariant: "no-halt-while-target-answered",
		Composed:  true,
		Old: `		close(running)
		done <- probeResult{err: err, latency: lat}`,
		Body: `		close(running) // DEFECT (plant probe-result-after-slot): the waiter re-evaluates first
		{{gap}}
		done <- probeResult{err: err, latency: lat}`,
	},
}
