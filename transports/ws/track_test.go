package ws

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

const gt = 800 * time.Millisecond // GapTimeout in these tests: eighths of 100 ms

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func tick(seq uint64) Frame { return Frame{Kind: FrameTick, Stream: "s", Seq: seq} }
func snap(seq uint64) Frame { return Frame{Kind: FrameSnapshot, Stream: "s", Seq: seq} }
func eTick(seq uint64, e string) Frame {
	return Frame{Kind: FrameTick, Stream: "s", Seq: seq, Epoch: e}
}
func eSnap(seq uint64, e string) Frame {
	return Frame{Kind: FrameSnapshot, Stream: "s", Seq: seq, Epoch: e}
}

// started returns a track that delivered a snapshot at 0 and ticks 1..last.
func started(t *testing.T, last uint64, epoch string) *track {
	t.Helper()
	tr := &track{}
	tr.hello(t0, true)
	if tr.trouble != troubleAttach {
		t.Fatalf("after subscribe: trouble %v, want attach", tr.trouble)
	}
	if o := tr.frame(t0, eSnap(0, epoch), 64); o.v != vDeliver || o.ended != troubleAttach {
		t.Fatalf("first snapshot: %+v", o)
	}
	for s := uint64(1); s <= last; s++ {
		if o := tr.frame(t0, eTick(s, epoch), 64); o.v != vDeliver {
			t.Fatalf("tick %d: %+v", s, o)
		}
	}
	return tr
}

// fireAll returns the requests due at each instant, in order.
func fireAll(tr *track, at time.Duration) []request {
	var out []request
	for r := tr.fire(t0.Add(at), gt); r != reqNone; r = tr.fire(t0.Add(at), gt) {
		out = append(out, r)
	}
	return out
}

// A gap is resumed at once, again at 1/8, 3/8 and 7/8 of GapTimeout, a
// snapshot is asked for at GapTimeout and the connection given up at twice it;
// nothing is due in between.
func TestTrackGapLadder(t *testing.T) {
	tr := started(t, 10, "")
	o := tr.frame(t0, tick(13), 64)
	if o.v != vHold || o.began != troubleGap || o.req != reqResume {
		t.Fatalf("gap: %+v", o)
	}
	if o := tr.frame(t0, tick(14), 64); o.v != vHold || o.began != troubleNone || o.req != reqNone {
		t.Fatalf("second message during the gap: %+v (want held, no second resume)", o)
	}
	want := map[time.Duration]request{100 * time.Millisecond: reqResume, 300 * time.Millisecond: reqResume,
		700 * time.Millisecond: reqResume, 800 * time.Millisecond: reqSnapshot, 1600 * time.Millisecond: reqReconnect}
	for at := time.Duration(0); at <= 3*time.Second; at += 50 * time.Millisecond {
		got := fireAll(tr, at)
		w, ok := want[at]
		switch {
		case ok && (len(got) != 1 || got[0] != w):
			t.Fatalf("at %v: %v, want %v", at, got, w)
		case !ok && len(got) != 0:
			t.Fatalf("at %v: %v, want nothing", at, got)
		}
	}
	if d := tr.due(gt); !d.IsZero() {
		t.Fatalf("after the reconnect rung: due %v, want nothing until the next hello", d)
	}
	// The new connection's resume starts the ladder over; the replay repairs.
	tr.hello(t0.Add(2*time.Second), false)
	if d := tr.due(gt); !d.Equal(t0.Add(2*time.Second + 100*time.Millisecond)) {
		t.Fatalf("after hello: due %v", d)
	}
	if o := tr.frame(t0, tick(11), 64); o.v != vDeliver || o.ended != troubleGap {
		t.Fatalf("replayed 11: %+v", o)
	}
	if tr.trouble != troubleNone || !tr.due(gt).IsZero() {
		t.Fatalf("after repair: %+v", tr)
	}
}

// A snapshot ahead of the stream repairs a gap (delivered as a snapshot, not a
// restart).
func TestTrackSnapshotRepairsGap(t *testing.T) {
	tr := started(t, 10, "")
	tr.frame(t0, tick(20), 64)
	if o := tr.frame(t0, snap(25), 64); o.v != vDeliver || o.restart || o.ended != troubleGap {
		t.Fatalf("snapshot: %+v", o)
	}
	if o := tr.frame(t0, tick(26), 64); o.v != vDeliver {
		t.Fatalf("tick after snapshot: %+v", o)
	}
}

// Epochs: a tick of a new epoch is held and a snapshot asked for; only a
// snapshot of that epoch is delivered, flagged as a restart, whatever its
// sequence number; ticks of the new epoch follow. A snapshot of a new epoch
// is delivered at once.
func TestTrackEpochs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart uint64 // the new epoch's first tick
	}{{"new epoch below", 5}, {"new epoch ahead", 150}, {"new epoch at next", 101}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := started(t, 100, "e1")
			o := tr.frame(t0, eTick(tc.restart, "e2"), 64)
			if o.v != vHold || o.began != troubleRestart || o.req != reqSnapshot {
				t.Fatalf("tick of a new epoch: %+v", o)
			}
			if o := tr.frame(t0, eSnap(200, "e1"), 64); o.v != vHold {
				t.Fatalf("snapshot of the old epoch: %+v", o)
			}
			if o := tr.frame(t0, eSnap(tc.restart+1, "e2"), 64); o.v != vDeliver || !o.restart || o.ended != troubleRestart {
				t.Fatalf("snapshot of the new epoch: %+v", o)
			}
			if o := tr.frame(t0, eTick(tc.restart+2, "e2"), 64); o.v != vDeliver || o.restart {
				t.Fatalf("tick after: %+v", o)
			}
			if tr.epoch != "e2" {
				t.Fatalf("epoch %q", tr.epoch)
			}
		})
	}
	tr := started(t, 100, "e1")
	if o := tr.frame(t0, eSnap(3, "e2"), 64); o.v != vDeliver || !o.restart {
		t.Fatalf("snapshot of a new epoch: %+v", o)
	}
	// Same epoch: never a restart, however far back (a late duplicate).
	if o := tr.frame(t0, eTick(1, "e2"), 64); o.v != vDrop {
		t.Fatalf("old message of the same epoch: %+v", o)
	}
	// A restart not answered in GapTimeout gives up on the connection; the
	// next connection subscribes (not resumes).
	tr = started(t, 100, "e1")
	tr.frame(t0, eTick(2, "e2"), 64)
	if !tr.subscribeOnHello() {
		t.Fatal("a restarting stream resumes on the next connection; want a subscribe")
	}
	if got := fireAll(tr, gt); len(got) != 1 || got[0] != reqReconnect {
		t.Fatalf("restart unanswered for GapTimeout: %v", got)
	}
}

// Without epochs: a message more than ReplayWindow below the last is a
// restart; one within it is a duplicate, and a stream that sees only those
// asks for a snapshot at GapTimeout and takes one still behind as a restart.
func TestTrackRestartWithoutEpoch(t *testing.T) {
	tr := started(t, 100, "")
	if o := tr.frame(t0, snap(5), 64); o.v != vDeliver || !o.restart {
		t.Fatalf("snapshot 95 below: %+v", o)
	}
	tr = started(t, 100, "")
	if o := tr.frame(t0, tick(5), 64); o.v != vHold || o.began != troubleRestart || o.req != reqSnapshot {
		t.Fatalf("tick 95 below: %+v", o)
	}
	if o := tr.frame(t0, snap(7), 64); o.v != vDeliver || !o.restart {
		t.Fatalf("snapshot after: %+v", o)
	}

	// Within the window: a lagging replica or a restart, told apart by time.
	tr = started(t, 100, "")
	if o := tr.frame(t0, snap(60), 64); o.v != vDrop || o.began != troubleBehind {
		t.Fatalf("snapshot 40 below: %+v", o)
	}
	for s := uint64(61); s <= 70; s++ {
		if o := tr.frame(t0, tick(s), 64); o.v != vDrop {
			t.Fatalf("tick %d: %+v", s, o)
		}
	}
	if got := fireAll(tr, gt/2); len(got) != 0 || tr.troubled() {
		t.Fatalf("behind for GapTimeout/2: %v, troubled %v (want quiet: a replay or a replica catching up)", got, tr.troubled())
	}
	if got := fireAll(tr, gt); len(got) != 1 || got[0] != reqSnapshot || !tr.troubled() {
		t.Fatalf("behind for GapTimeout: %v, troubled %v", got, tr.troubled())
	}
	if tr.hello(t0.Add(gt), false); !tr.troubled() {
		t.Fatal("an escalated trouble went quiet on a new connection")
	}
	if o := tr.frame(t0, snap(71), 64); o.v != vDeliver || !o.restart || o.ended != troubleBehind {
		t.Fatalf("requested snapshot still behind: %+v", o)
	}
	if o := tr.frame(t0, tick(72), 64); o.v != vDeliver {
		t.Fatalf("tick after the restart: %+v", o)
	}

	// A lagging replica that catches up in time is no restart.
	tr = started(t, 100, "")
	tr.frame(t0, snap(90), 64)
	for s := uint64(91); s <= 100; s++ {
		tr.frame(t0, tick(s), 64)
	}
	if o := tr.frame(t0, tick(101), 64); o.v != vDeliver || o.restart || o.ended != troubleBehind {
		t.Fatalf("caught up: %+v", o)
	}
	// A requested snapshot exactly at the last delivered ends the trouble.
	tr = started(t, 100, "")
	tr.frame(t0, tick(99), 64)
	fireAll(tr, gt)
	if o := tr.frame(t0, snap(100), 64); o.v != vDrop || o.ended != troubleBehind || tr.trouble != troubleNone {
		t.Fatalf("snapshot at last: %+v, %v", o, tr.trouble)
	}
}

// A subscription never answered asks again at GapTimeout and gives up at
// twice it.
func TestTrackAttachLadder(t *testing.T) {
	tr := &track{}
	tr.hello(t0, true)
	if got := fireAll(tr, gt-time.Millisecond); len(got) != 0 {
		t.Fatalf("early: %v", got)
	}
	if got := fireAll(tr, gt); len(got) != 1 || got[0] != reqSnapshot {
		t.Fatalf("at GapTimeout: %v", got)
	}
	if got := fireAll(tr, 2*gt); len(got) != 1 || got[0] != reqReconnect {
		t.Fatalf("at 2×GapTimeout: %v", got)
	}
	// A known, healthy stream resumed on a new connection is no trouble.
	tr = started(t, 3, "")
	tr.hello(t0, false)
	if tr.trouble != troubleNone {
		t.Fatalf("resume: %v", tr.trouble)
	}
}

// FuzzTrack feeds a track arbitrary messages, clock steps and hellos and
// checks what the Handler would see: within a numbering, strictly increasing
// sequence numbers, a tick only right after the last; a lower or equal number
// only on a flagged restart snapshot; the ladder always moving forward.
func FuzzTrack(f *testing.F) {
	enc := func(ops ...[4]uint16) []byte {
		var b []byte
		for _, o := range ops {
			for _, v := range o {
				b = binary.BigEndian.AppendUint16(b, v)
			}
		}
		return b
	}
	// op: kind (0 tick, 1 snapshot, 2 time step, 3 hello resume, 4 hello
	// subscribe), seq, epoch (0 = none), time step in ms.
	f.Add(enc([4]uint16{1, 0, 0, 0}, [4]uint16{0, 1, 0, 0}, [4]uint16{0, 3, 0, 0}, [4]uint16{2, 0, 0, 900}, [4]uint16{1, 5, 0, 0}))
	f.Add(enc([4]uint16{1, 0, 1, 0}, [4]uint16{0, 1, 1, 0}, [4]uint16{0, 2, 2, 0}, [4]uint16{1, 1, 2, 0}, [4]uint16{0, 2, 2, 0}))
	f.Add(enc([4]uint16{1, 100, 0, 0}, [4]uint16{0, 40, 0, 0}, [4]uint16{2, 0, 0, 800}, [4]uint16{1, 41, 0, 0}))
	f.Add(enc([4]uint16{0, 7, 0, 0}, [4]uint16{0, 9, 0, 0}, [4]uint16{3, 0, 0, 0}, [4]uint16{2, 0, 0, 1700}, [4]uint16{0, 8, 0, 0}))
	f.Add(enc([4]uint16{4, 0, 0, 0}, [4]uint16{2, 0, 0, 2000}, [4]uint16{1, 65535, 3, 0}, [4]uint16{0, 0, 3, 0}))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := &track{}
		now := t0
		var delivered bool
		var last uint64
		var lastEpoch string
		for len(data) >= 8 {
			op, seq, ep, step := binary.BigEndian.Uint16(data), binary.BigEndian.Uint16(data[2:]), binary.BigEndian.Uint16(data[4:]), binary.BigEndian.Uint16(data[6:])
			data = data[8:]
			epoch := ""
			if ep%4 != 0 {
				epoch = string(rune('a' + ep%4))
			}
			switch op % 5 {
			case 0, 1:
				f := Frame{Kind: FrameTick, Stream: "s", Seq: uint64(seq), Epoch: epoch}
				if op%5 == 1 {
					f.Kind = FrameSnapshot
				}
				o := tr.frame(now, f, 64)
				if o.v == vDeliver {
					switch {
					case !delivered:
					case o.restart:
						if f.Kind != FrameSnapshot {
							t.Fatalf("restart on a tick %+v", f)
						}
					case f.Seq <= last:
						t.Fatalf("seq %d delivered after %d without a restart", f.Seq, last)
					case f.Kind == FrameTick && f.Seq != last+1:
						t.Fatalf("tick %d delivered after %d: a gap went through", f.Seq, last)
					case epoch != "" && lastEpoch != "" && epoch != lastEpoch:
						t.Fatalf("epoch %q delivered after %q without a restart", epoch, lastEpoch)
					}
					delivered, last = true, f.Seq
					if epoch != "" || o.restart {
						lastEpoch = epoch
					}
				}
				if (o.req != reqNone) != (o.began != troubleNone && o.began != troubleBehind) {
					t.Fatalf("outcome %+v: a request without a new trouble, or the reverse", o)
				}
			case 2:
				now = now.Add(time.Duration(step) * time.Millisecond)
				prev := tr.due(gt)
				for r := tr.fire(now, gt); r != reqNone; r = tr.fire(now, gt) {
					d := tr.due(gt)
					if !d.IsZero() && !prev.IsZero() && d.Before(prev) {
						t.Fatalf("ladder went back: %v after %v", d, prev)
					}
					prev = d
				}
				if d := tr.due(gt); !d.IsZero() && !d.After(now) {
					t.Fatalf("a rung due at %v left unfired at %v", d, now)
				}
			case 3, 4:
				tr.hello(now, op%5 == 4 || tr.subscribeOnHello())
			}
			if tr.trouble != troubleNone && tr.since.After(now) {
				t.Fatalf("trouble since the future: %+v", tr)
			}
			if tr.known != delivered || tr.last != last {
				t.Fatalf("track %+v, handler saw delivered=%v last=%d", tr, delivered, last)
			}
		}
	})
}

var parseErr = regexp.MustCompile(`^ws: unreadable frame: (not a JSON object with string type, stream, message and an unsigned seq \(\d+ bytes\)|(tick|snapshot) without stream or seq|(tick|snapshot) with an epoch that is neither a string nor a number)$`)

// FuzzJSONProtocolParse: Parse never panics; its errors are one of its own
// sentences, never the server's text; a frame it returns is valid (a tick or
// snapshot names its stream; an error frame or another frame carries nothing
// else), its fields come from the message (at most 3 bytes for each byte of
// it: invalid UTF-8 becomes U+FFFD), and written back as JSON it reads as the
// same frame. Parsing allocates at most 16 bytes per byte of input plus
// 64 KiB.
//
//	go test -run '^$' -fuzz '^FuzzJSONProtocolParse$' -fuzztime 60s ./transports/ws/
func FuzzJSONProtocolParse(f *testing.F) {
	for _, s := range []string{
		`{"type":"tick","stream":"px.A","seq":42,"price":"1.0843"}`,
		`{"type":"snapshot","stream":"px.A","seq":0,"epoch":"7f3a"}`,
		`{"type":"tick","stream":"px.A","seq":1,"epoch":12}`,
		`{"type":"tick","stream":"px.A","seq":1,"epoch":{"x":1}}`,
		`{"type":"error","message":"token abc123 rejected"}`,
		`{"type":"tick SECRET","stream":"px.A"}`,
		`{"type":"tick","stream":"px.A","seq":-1}`,
		`{"type":"tick","stream":"s","seq":18446744073709551615,"epoch":-0}`,
		"{\"type\":\"tick\",\"stream\":\"\xff\xfe\",\"seq\":1,\"epoch\":\"\\u0000\"}",
		`{"type":"error","message":"bad \n INFO order ACCEPTED"}`,
		`{"type":"pong"}`, `not json SECRET`, `[]`, `null`, ``, `{"type":`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fr, err := JSONProtocol{}.Parse(data)
		runtime.ReadMemStats(&after)
		if a, bound := after.TotalAlloc-before.TotalAlloc, 16*uint64(len(data))+64<<10; a > bound {
			t.Fatalf("Parse of %d bytes allocated %d bytes, want <= %d", len(data), a, bound)
		}
		if err != nil {
			if !parseErr.MatchString(err.Error()) || !errors.Is(err, ErrBadFrame) || fr != (Frame{}) {
				t.Fatalf("Parse(%q) = %+v, error %q: not one of its own sentences wrapping ErrBadFrame", data, fr, err)
			}
			return
		}
		if n := len(fr.Stream) + len(fr.Epoch) + len(fr.Err); n > 3*len(data) {
			t.Fatalf("Parse(%q): frame fields of %d bytes from a message of %d", data, n, len(data))
		}
		var back []byte
		switch fr.Kind {
		case FrameTick, FrameSnapshot:
			if fr.Stream == "" || fr.Err != "" {
				t.Fatalf("Parse(%q) = %+v: a sequenced frame without a stream, or with an error", data, fr)
			}
			kind := map[FrameKind]string{FrameTick: "tick", FrameSnapshot: "snapshot"}[fr.Kind]
			back, err = json.Marshal(map[string]any{"type": kind, "stream": fr.Stream, "seq": fr.Seq, "epoch": fr.Epoch})
		case FrameError:
			if fr.Stream != "" || fr.Seq != 0 || fr.Epoch != "" {
				t.Fatalf("Parse(%q) = %+v: an error frame with stream fields", data, fr)
			}
			back, err = json.Marshal(map[string]any{"type": "error", "message": fr.Err})
		case FrameOther:
			if fr != (Frame{Kind: FrameOther}) {
				t.Fatalf("Parse(%q) = %+v: another frame with fields", data, fr)
			}
			return
		default:
			t.Fatalf("Parse(%q): frame kind %d", data, fr.Kind)
		}
		if err != nil {
			t.Fatal(err)
		}
		if again, err := (JSONProtocol{}).Parse(back); err != nil || again != fr {
			t.Fatalf("Parse(%q) = %+v; written back as %s it reads as %+v, %v", data, fr, back, again, err)
		}
	})
}

// BenchmarkTrackFrame is the per-message sequencing cost (in order, no
// trouble): no allocation.
func BenchmarkTrackFrame(b *testing.B) {
	b.ReportAllocs()
	tr := &track{}
	tr.frame(t0, snap(0), 64)
	f := tick(0)
	for i := range b.N {
		f.Seq = uint64(i) + 1
		if o := tr.frame(t0, f, 64); o.v != vDeliver {
			b.Fatal(o)
		}
	}
}

// BenchmarkJSONProtocolParse is the default protocol's cost per tick.
func BenchmarkJSONProtocolParse(b *testing.B) {
	b.ReportAllocs()
	data := []byte(`{"type":"tick","stream":"px.EURUSD","seq":42,"epoch":"7f3a","price":"1.0843","time":"2026-01-01T00:00:00Z"}`)
	for range b.N {
		if _, err := (JSONProtocol{}).Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzStreamFrames runs raw server messages (newline-separated) through the
// Stream's own frame handling (Protocol.Parse, then the sequencing and the
// Stats) and checks what the Handler sees: per stream, strictly increasing
// sequence numbers within a numbering, ticks only right after the last, a
// lower number only on a flagged restart snapshot; Stats agree with it.
func FuzzStreamFrames(f *testing.F) {
	for _, s := range []string{
		"{\"type\":\"snapshot\",\"stream\":\"a\",\"seq\":0}\n{\"type\":\"tick\",\"stream\":\"a\",\"seq\":1}\n{\"type\":\"tick\",\"stream\":\"a\",\"seq\":3}\n{\"type\":\"snapshot\",\"stream\":\"a\",\"seq\":5}",
		"{\"type\":\"snapshot\",\"stream\":\"a\",\"seq\":100,\"epoch\":\"x\"}\n{\"type\":\"tick\",\"stream\":\"a\",\"seq\":2,\"epoch\":\"y\"}\n{\"type\":\"snapshot\",\"stream\":\"a\",\"seq\":2,\"epoch\":\"y\"}",
		"{\"type\":\"snapshot\",\"stream\":\"b\",\"seq\":500}\n{\"type\":\"tick\",\"stream\":\"b\",\"seq\":3}\n{\"type\":\"snapshot\",\"stream\":\"b\",\"seq\":3}\n{\"type\":\"tick\",\"stream\":\"b\",\"seq\":4}",
		"{\"type\":\"error\",\"message\":\"x\"}\n{\"type\":\"tick\",\"stream\":\"zz\",\"seq\":1}\nnot json\n{\"type\":\"tick\",\"stream\":\"a\",\"seq\":18446744073709551615}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		type seen struct {
			any   bool
			last  uint64
			epoch string
		}
		got := map[string]*seen{"a": {}, "b": {}}
		var delivered uint64
		cfg := DefaultStreamConfig()
		cfg.Streams = []string{"a", "b"}
		cfg.Handler = func(m Message) {
			delivered++
			g := got[m.Stream]
			switch {
			case g == nil:
				t.Fatalf("message for a stream not subscribed: %+v", m)
			case !g.any:
			case m.Restart:
				if !m.Snapshot {
					t.Fatalf("restart on a tick %+v", m)
				}
			case m.Seq <= g.last:
				t.Fatalf("%s: seq %d after %d without a restart", m.Stream, m.Seq, g.last)
			case !m.Snapshot && m.Seq != g.last+1:
				t.Fatalf("%s: tick %d after %d", m.Stream, m.Seq, g.last)
			case m.Epoch != "" && g.epoch != "" && m.Epoch != g.epoch:
				t.Fatalf("%s: epoch %q after %q without a restart", m.Stream, m.Epoch, g.epoch)
			}
			g.any, g.last = true, m.Seq
			if m.Epoch != "" || m.Restart {
				g.epoch = m.Epoch
			}
		}
		s := &Stream{cfg: cfg, proto: JSONProtocol{}, log: slog.New(slog.DiscardHandler),
			tracks: map[string]*track{"a": {}, "b": {}}, resuming: map[string]*live{}}
		l := &live{c: &Conn{endpoint: "eu"}, acked: map[string]bool{}}
		for _, line := range bytes.Split(data, []byte("\n")) {
			fr, err := s.proto.Parse(line)
			if err != nil {
				continue // the Stream drops the connection
			}
			_ = s.frame(inbound{l: l, f: fr, data: line})
		}
		st := s.Stats()
		if st.Messages != delivered || st.GapsRepaired > st.Gaps {
			t.Fatalf("stats %+v, %d delivered", st, delivered)
		}
	})
}
