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
}
