package etcdcoord

import (
	"errors"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// verifyBinding accepts a record only at the write of the key it names: each
// case is a record and the key as a follower reads it.
func TestVerifyBinding(t *testing.T) {
	active := Assignment{Phase: PhaseActive, Endpoint: "eu", Decider: "d", Term: 3, Lease: 7, Created: 10, Version: 4}
	fence := Assignment{Phase: PhaseFencing, Endpoint: "eu", Decider: "d", Term: 3, Lease: 7, Version: 1}
	created := active
	created.Created = 0
	created.Version = 1
	for _, c := range []struct {
		name string
		a    Assignment
		kv   *mvccpb.KeyValue
		want string // "" accepted, else a fragment of the refusal
	}{
		{"the decider's write", active, &mvccpb.KeyValue{CreateRevision: 10, ModRevision: 40, Version: 4}, ""},
		{"replayed later on the same key", active, &mvccpb.KeyValue{CreateRevision: 10, ModRevision: 55, Version: 6}, "a replay or a copy"},
		{"replayed at once (next version)", active, &mvccpb.KeyValue{CreateRevision: 10, ModRevision: 41, Version: 5}, "a replay or a copy"},
		{"replayed after a delete", active, &mvccpb.KeyValue{CreateRevision: 60, ModRevision: 60, Version: 1}, "a replay or a copy"},
		{"a fence that created the key", fence, &mvccpb.KeyValue{CreateRevision: 5, ModRevision: 5, Version: 1}, ""},
		{"a fence that created the key, replayed on the same key", fence, &mvccpb.KeyValue{CreateRevision: 5, ModRevision: 9, Version: 2}, "a replay or a copy"},
		{"an active record that created the key", created, &mvccpb.KeyValue{CreateRevision: 5, ModRevision: 5, Version: 1}, "only a fence or a halt may create the key"},
	} {
		err := verifyBinding(c.a, c.kv)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a bad record naming %q", c.name, err, c.want)
		}
	}
	if _, err := decodeAssignment([]byte(`{"phase":"active","endpoint":"eu","decider":"d","term":1,"lease":1}`)); err == nil || !strings.Contains(err.Error(), "version 0") {
		t.Errorf("a record without a version: %v, want refused naming the version", err)
	}
}
