package ws_test

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/transports/ws"
)

// FuzzJSONProtocolParse: any bytes a server sends give either an error
// wrapping ws.ErrBadFrame that does not quote them, or a valid Frame: a tick
// or snapshot names its stream, every field comes from the message (no
// longer than 3 bytes for each byte of it: invalid UTF-8 becomes U+FFFD), and
// writing the frame back as JSON reads as the same frame. Parsing allocates
// at most 16 bytes per byte of input plus 64 KiB.
//
//	go test -run '^$' -fuzz '^FuzzJSONProtocolParse$' -fuzztime 60s ./transports/ws/
func FuzzJSONProtocolParse(f *testing.F) {
	for _, s := range []string{
		`{"type":"tick","stream":"px.EURUSD","seq":42}`,
		`{"type":"snapshot","stream":"px.EURUSD","seq":0,"epoch":"7f3a"}`,
		`{"type":"tick","stream":"s","seq":18446744073709551615,"epoch":12}`,
		`{"type":"tick","stream":"s","seq":-1}`,
		`{"type":"tick","stream":"s","seq":1.5}`,
		`{"type":"tick","stream":"","seq":1}`,
		`{"type":"snapshot","stream":"s","seq":1,"epoch":{"a":1}}`,
		`{"type":"error","message":"bad token \u0000\n"}`,
		`{"type":"pong"}`,
		`{"type":"tick","stream":"\xff\xfe","seq":1,"epoch":-0}`,
		`[1,2,3]`, `null`, `"tick"`, ``, `{`, `{"type":`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	} {
		f.Add([]byte(s))
	}
	p := ws.JSONProtocol{}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fr, err := p.Parse(data)
		runtime.ReadMemStats(&after)
		if a, bound := after.TotalAlloc-before.TotalAlloc, 16*uint64(len(data))+64<<10; a > bound {
			t.Fatalf("Parse of %d bytes allocated %d bytes, want <= %d", len(data), a, bound)
		}
		if err != nil {
			if !errors.Is(err, ws.ErrBadFrame) {
				t.Fatalf("error %v does not wrap ErrBadFrame", err)
			}
			if fr != (ws.Frame{}) {
				t.Fatalf("error %v with a frame %+v", err, fr)
			}
			if len(data) >= 16 && strings.Contains(err.Error(), string(data)) {
				t.Fatalf("error quotes the server's message: %v", err)
			}
			return
		}
		if n := len(fr.Stream) + len(fr.Epoch) + len(fr.Err); n > 3*len(data) {
			t.Fatalf("frame fields of %d bytes from a message of %d", n, len(data))
		}
		var back []byte
		switch fr.Kind {
		case ws.FrameTick, ws.FrameSnapshot:
			if fr.Stream == "" || fr.Err != "" {
				t.Fatalf("frame %+v: a tick or snapshot without a stream, or with an error", fr)
			}
			kind := "tick"
			if fr.Kind == ws.FrameSnapshot {
				kind = "snapshot"
			}
			back, err = json.Marshal(map[string]any{"type": kind, "stream": fr.Stream, "seq": fr.Seq, "epoch": fr.Epoch})
		case ws.FrameError:
			if fr.Stream != "" || fr.Seq != 0 || fr.Epoch != "" {
				t.Fatalf("error frame %+v carries stream fields", fr)
			}
			back, err = json.Marshal(map[string]any{"type": "error", "message": fr.Err})
		case ws.FrameOther:
			if fr != (ws.Frame{Kind: ws.FrameOther}) {
				t.Fatalf("other frame %+v carries fields", fr)
			}
			return
		default:
			t.Fatalf("frame kind %d", fr.Kind)
		}
		if err != nil {
			t.Fatal(err)
		}
		again, err := p.Parse(back)
		if err != nil || again != fr {
			t.Fatalf("frame %+v written back as %s reads as %+v, %v", fr, back, again, err)
		}
	})
}
