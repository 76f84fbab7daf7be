package ws

import "time"

// trouble is why a stream is not progressing.
type trouble int

const (
	troubleNone    trouble = iota
	troubleAttach          // subscribed, no first message yet
	troubleGap             // a message ahead of last+1 arrived; a resume was sent
	troubleBehind          // messages at or below last arrive, nothing new
	troubleRestart         // the server restarted its numbering; waiting for a snapshot of the new one
)

var troubleNames = [...]string{"none", "attach", "gap", "behind", "restart"}

func (t trouble) String() string { return troubleNames[t] }

// request is what the stream must send (or do) for a stream.
type request int

const (
	reqNone      request = iota
	reqResume            // Protocol.Resume from last
	reqSnapshot          // Protocol.Subscribe, asking for a fresh snapshot
	reqReconnect         // give up on the connection feeding the stream
)

var requestNames = [...]string{"none", "resume", "snapshot", "reconnect"}

func (r request) String() string { return requestNames[r] }

type rung struct {
	eighths int // offset from the ladder's start in eighths of GapTimeout
	req     request
}

// ladders are the escalation of each trouble, from its start (the detection,
// or the hello of a new connection): step 0 is done at once (by the caller or
// by the hello), the rest when due.
var ladders = [...][]rung{
	troubleAttach:  {{0, reqSnapshot}, {8, reqSnapshot}, {16, reqReconnect}},
	troubleGap:     {{0, reqResume}, {1, reqResume}, {3, reqResume}, {7, reqResume}, {8, reqSnapshot}, {16, reqReconnect}},
	troubleBehind:  {{0, reqNone}, {8, reqSnapshot}, {16, reqReconnect}},
	troubleRestart: {{0, reqSnapshot}, {8, reqReconnect}},
}

// verdict says what to do with one message.
type verdict int

const (
	vDrop    verdict = iota // a duplicate (seq <= last): counted, dropped
	vHold                   // dropped while a gap or restart is repaired: the repair brings it again
	vDeliver                // hand it to the Handler
)

// outcome is the result of one message for its stream.
type outcome struct {
	v verdict
	// restart: the delivered message starts a new numbering (Message.Restart).
	restart bool
	// began is the trouble this message started (troubleNone if none).
	began trouble
	// ended is the trouble this message ended (troubleNone if none).
	ended trouble
	// req is what to send at once on the message's connection.
	req request
	// escalated: the ended trouble climbed past its first rung.
	escalated bool
}

// track is one stream's sequencing state: its position, its epoch, and the
// trouble being repaired with its escalation ladder. It does no I/O and reads
// no clock: the Stream passes the time in, so it is tested (and fuzzed)
// directly.
type track struct {
	known bool
	last  uint64
	epoch string

	trouble trouble
	since   time.Time // the trouble began (kept across reconnects)
	start   time.Time // the ladder started (the detection, or the last hello)
	next    int       // the ladder's next rung
	asked   bool      // a snapshot was asked for since the trouble began
	// newEpoch is the epoch a restart waits for ("" means any snapshot).
	newEpoch string
}

func (t *track) begin(now time.Time, k trouble) {
	if t.trouble == troubleNone {
		t.since = now
	}
	t.trouble, t.start, t.next, t.asked, t.newEpoch = k, now, 1, k == troubleRestart, ""
}

func (t *track) clear() {
	t.trouble, t.next, t.asked, t.newEpoch = troubleNone, 0, false, ""
}

func (t *track) deliver(f Frame, restart bool) outcome {
	o := outcome{v: vDeliver, restart: restart, ended: t.trouble, escalated: t.next > 1}
	t.known, t.last = true, f.Seq
	if f.Epoch != "" || restart {
		t.epoch = f.Epoch
	}
	t.clear()
	return o
}

// frame applies one tick or snapshot. window is StreamConfig.ReplayWindow.
func (t *track) frame(now time.Time, f Frame, window uint64) outcome {
	snap := f.Kind == FrameSnapshot
	if !t.known {
		// The first message: a snapshot (or, from a server that sends none, a
		// tick) starts the stream wherever it is.
		return t.deliver(f, false)
	}
	if t.trouble == troubleRestart {
		if snap && (t.newEpoch == "" || f.Epoch == t.newEpoch) {
			return t.deliver(f, true)
		}
		return outcome{v: vHold}
	}
	if f.Epoch != "" && t.epoch != "" && f.Epoch != t.epoch {
		// A new sequence space: numbers are not comparable across it.
		if snap {
			return t.deliver(f, true)
		}
		t.begin(now, troubleRestart)
		t.newEpoch = f.Epoch
		return outcome{v: vHold, began: troubleRestart, req: reqSnapshot}
	}
	if f.Epoch == "" && f.Seq < t.last && t.last-f.Seq > window {
		// Further back than any replay or lagging replica would be.
		if snap {
			return t.deliver(f, true)
		}
		t.begin(now, troubleRestart)
		return outcome{v: vHold, began: troubleRestart, req: reqSnapshot}
	}
	if f.Seq <= t.last {
		switch {
		case snap && t.asked && f.Seq < t.last:
			// The snapshot we asked for is still behind what we delivered,
			// after GapTimeout: the server's numbering started over.
			return t.deliver(f, true)
		case snap && f.Seq == t.last && t.trouble == troubleBehind:
			// The server is exactly where we are: nothing is missing.
			o := outcome{v: vDrop, ended: t.trouble}
			t.clear()
			return o
		case f.Seq < t.last && t.trouble == troubleNone:
			t.begin(now, troubleBehind)
			return outcome{v: vDrop, began: troubleBehind}
		}
		return outcome{v: vDrop}
	}
	if !snap && f.Seq > t.last+1 {
		if t.trouble == troubleGap {
			return outcome{v: vHold}
		}
		t.begin(now, troubleGap)
		return outcome{v: vHold, began: troubleGap, req: reqResume}
	}
	return t.deliver(f, false)
}

// hello records that a new connection was just asked for the stream (a resume,
// or a subscribe when fresh is true): the ladder of a trouble in progress
// starts over from there, and a subscribe that is not answered becomes one.
func (t *track) hello(now time.Time, fresh bool) {
	if t.trouble == troubleNone {
		if !fresh || t.known {
			return
		}
		t.begin(now, troubleAttach)
		return
	}
	t.start, t.next = now, 1
}

// troubled reports whether the stream counts as broken for Health: any
// trouble but a server behind the client that has not yet outlasted its first
// rung (a replay overlapping what was delivered, a replica catching up).
func (t *track) troubled() bool {
	return t.trouble != troubleNone && (t.trouble != troubleBehind || t.next > 1 || t.asked)
}

// subscribeOnHello reports whether a new connection should subscribe to the
// stream (take a snapshot) rather than resume it.
func (t *track) subscribeOnHello() bool { return !t.known || t.trouble == troubleRestart }

// due returns when the next rung is due; zero when nothing is.
func (t *track) due(gapTimeout time.Duration) time.Time {
	if t.trouble == troubleNone {
		return time.Time{}
	}
	l := ladders[t.trouble]
	if t.next >= len(l) {
		return time.Time{}
	}
	return t.start.Add(gapTimeout * time.Duration(l[t.next].eighths) / 8)
}

// fire returns the next rung's request if it is due at now (and moves past
// it); reqNone otherwise. Call it until it returns reqNone.
func (t *track) fire(now time.Time, gapTimeout time.Duration) request {
	d := t.due(gapTimeout)
	if d.IsZero() || now.Before(d) {
		return reqNone
	}
	r := ladders[t.trouble][t.next].req
	t.next++
	if r == reqSnapshot {
		t.asked = true
	}
	return r
}
