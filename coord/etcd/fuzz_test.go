package etcdcoord

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// FuzzDecodeAssignment: any bytes give an error wrapping ErrBadRecord or a
// record that passes its checks and round-trips through JSON unchanged.
func FuzzDecodeAssignment(f *testing.F) {
	valid := Assignment{Phase: PhaseActive, Endpoint: "eu", Decider: "decider-1", Term: 7, Lease: 0x694d7b5c3e2a1f01, Created: 12, Version: 3, Reason: "initial assignment: the primary", At: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)}
	b, _ := json.Marshal(valid)
	f.Add(b)
	fence := valid
	fence.Phase, fence.Target = PhaseFencing, "us"
	b, _ = json.Marshal(fence)
	f.Add(b)
	for _, s := range []string{"{garbage", "", "null", "{}", `{"phase":"active"}`, `{"phase":"halted","endpoint":"eu","decider":"d","term":1,"lease":1,"version":1,"at":"2025-01-01T00:00:00+01:00"}`,
		`{"phase":"active","endpoint":"e/u","decider":"d","term":1,"lease":1}`, `{"phase":"active","endpoint":"eu","decider":"d","term":-1,"lease":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAssignment(b)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			if a != (Assignment{}) {
				t.Fatalf("error %v with a record %+v", err, a)
			}
			return
		}
		if err := a.check(); err != nil {
			t.Fatalf("decoded record fails its check: %v", err)
		}
		enc, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("marshal a decoded record: %v", err)
		}
		a2, err := decodeAssignment(enc)
		if err != nil {
			t.Fatalf("the re-encoded record %s is refused: %v", enc, err)
		}
		enc2, _ := json.Marshal(a2)
		if !bytes.Equal(enc, enc2) || !a.At.Equal(a2.At) || a.Phase != a2.Phase || a.Endpoint != a2.Endpoint || a.Target != a2.Target || a.Term != a2.Term || a.Lease != a2.Lease {
			t.Fatalf("round trip changed the record: %s → %s", enc, enc2)
		}
	})
}

// FuzzDecodeVerdict: any key and bytes give an error wrapping ErrBadRecord
// or an observation that names its key's observer and endpoint and
// round-trips through JSON unchanged.
func FuzzDecodeVerdict(f *testing.F) {
	keys, _ := newKeyLayout("/brokerpath/acct-1/")
	valid := Observation{Observer: "mon-eu", Region: "eu", Endpoint: "eu", State: engine.Healthy, Fresh: true, Latency: 3 * time.Millisecond, Round: 9, Identity: IdentityVerified}
	b, _ := json.Marshal(valid)
	f.Add("mon-eu/eu", b)
	down := valid
	down.State, down.Fresh, down.LastError, down.Identity = engine.Down, false, "timeout", ""
	b, _ = json.Marshal(down)
	f.Add("mon-eu/eu", b)
	f.Add("mon-x/eu", b)
	f.Add("mon-eu", b)
	for _, s := range []string{"{garbage", "", "null", "{}", `{"observer":"mon-eu","endpoint":"eu","state":"SIDEWAYS"}`, `{"observer":"mon-eu","endpoint":"eu","state":"DOWN","latency":-1}`} {
		f.Add("mon-eu/eu", []byte(s))
	}
	f.Fuzz(func(t *testing.T, key string, b []byte) {
		full := keys.Observations() + key
		o, err := decodeObservation(keys, full, b)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if keys.Observation(o.Observer, o.Endpoint) != full {
			t.Fatalf("observation %q/%q accepted under key %q", o.Observer, o.Endpoint, full)
		}
		enc, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("marshal a decoded observation: %v", err)
		}
		o2, err := decodeObservation(keys, full, enc)
		if err != nil {
			t.Fatalf("the re-encoded observation %s is refused: %v", enc, err)
		}
		if o != o2 {
			t.Fatalf("round trip changed the observation: %+v → %+v", o, o2)
		}
	})
}
