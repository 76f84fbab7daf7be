package etcdcoord_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/brokerpath/brokerpath/coord/etcd/internal/etcdtest"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// grantRoles sets up etcd's authentication for one account prefix as the
// package documentation describes (the etcdctl commands there do the same).
func grantRoles(t *testing.T, cli *clientv3.Client, pw string, observers, traders []string) {
	t.Helper()
	ctx := etcdtest.Ctx(t)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	user := func(name, role string) {
		must(cli.UserAdd(ctx, name, pw))
		must(cli.RoleAdd(ctx, role))
		must(cli.UserGrantRole(ctx, name, role))
	}
	pfx := func(k string) string { return clientv3.GetPrefixRangeEnd(k) }
	rw, ro := clientv3.PermissionType(clientv3.PermReadWrite), clientv3.PermissionType(clientv3.PermRead)
	user("root", "root")
	user("decider", "brokerpath-decider")
	must(cli.RoleGrantPermission(ctx, "brokerpath-decider", prefix, pfx(prefix), ro))
	must(cli.RoleGrantPermission(ctx, "brokerpath-decider", prefix+"assignment", "", rw))
	must(cli.RoleGrantPermission(ctx, "brokerpath-decider", prefix+"election/", pfx(prefix+"election/"), rw))
	for _, o := range observers {
		user(o, "brokerpath-observer-"+o)
		k := prefix + "observations/" + o + "/"
		must(cli.RoleGrantPermission(ctx, "brokerpath-observer-"+o, k, pfx(k), rw))
	}
	for _, tr := range traders {
		role := "brokerpath-trader-" + tr
		user(tr, role)
		must(cli.RoleGrantPermission(ctx, role, prefix+"assignment", "", ro))
		must(cli.RoleGrantPermission(ctx, role, prefix+"election/", pfx(prefix+"election/"), ro))
		must(cli.RoleGrantPermission(ctx, role, prefix+"followers/"+tr, "", rw))
	}
	must(cli.AuthEnable(ctx))
}

// With etcd's authentication on and one role per writer, every role does its
// work, and no trader or observer credential can write the assignment (or
// anyone else's key); failover still works.
func TestAuthRolesConfineWriters(t *testing.T) {
	r := newRig(t)
	const pw = "test-password"
	observers, traders := []string{"mon-eu", "mon-us"}, []string{"trader-1"}
	grantRoles(t, r.cli, pw, observers, traders)
	ep := r.srv.Endpoint
	r.cli = etcdtest.NewClientAuth(t, ep, "root", pw)
	if _, err := etcdtest.NewClient(t, ep).Put(r.ctx, prefix+"assignment", "{}"); !errors.Is(err, rpctypes.ErrUserEmpty) && !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Fatalf("an anonymous write: %v, want refused", err)
	}
	h := r.history()
	for _, o := range observers {
		r.observerWith(etcdtest.NewClientAuth(t, ep, o, pw), o)
	}
	r.decider(etcdtest.NewClientAuth(t, ep, "decider", pw), "decider-1")
	trCli := etcdtest.NewClientAuth(t, ep, "trader-1", pw)
	tr := r.trader(trCli, "trader-1")
	first := waitActive(t, h, "eu", tr)

	forged := first.a
	forged.Endpoint = "us"
	b, _ := json.Marshal(forged)
	denied := []struct {
		who string
		cli *clientv3.Client
		key string
	}{
		{"trader-1", trCli, prefix + "assignment"},
		{"trader-1", trCli, prefix + "observations/mon-eu/eu"},
		{"trader-1", trCli, prefix + "followers/trader-2"},
		{"trader-1", trCli, prefix + "election/1"},
		{"mon-eu", etcdtest.NewClientAuth(t, ep, "mon-eu", pw), prefix + "assignment"},
		{"mon-eu", etcdtest.NewClientAuth(t, ep, "mon-eu", pw), prefix + "observations/mon-us/eu"},
		{"decider", etcdtest.NewClientAuth(t, ep, "decider", pw), prefix + "observations/mon-eu/eu"},
	}
	for _, d := range denied {
		_, err := d.cli.Put(r.ctx, d.key, string(b))
		if !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Fatalf("%s writing %s: %v, want permission denied", d.who, d.key, err)
		}
	}
	if l, _ := h.last(); l.rev != first.rev {
		t.Fatalf("the assignment changed: %+v", l)
	}
	r.reach.set("mon-eu", "eu", false)
	r.reach.set("mon-us", "eu", false)
	waitActive(t, h, "us", tr)
}

// A well-formed assignment that was not written by the leader in office at
// its revision (here: written with the previous decider's term and lease
// after that decider resigned) is refused: the trader never trades on it,
// and holds until a record it can accept replaces it.
func TestAssignmentNotFromLeaderRefused(t *testing.T) {
	r := newRig(t)
	h := r.history()
	for _, o := range []string{"mon-eu", "mon-us"} {
		r.observer(o)
	}
	d, stopDecider := r.decider(r.cli, "decider-1")
	var lc logCount
	var bad atomic.Int64
	tr := r.traderLogged("trader-1", &lc, &bad)
	first := waitActive(t, h, "eu", tr)
	stopDecider()
	etcdtest.Eventually(t, 5*time.Second, "the decider resigns", func() bool { return !d.Leading() })

	// A forger who can read: the record binds to the write it makes (the
	// key's CreateRevision and next Version), so only the writer check
	// refuses it.
	cur, err := r.cli.Get(r.ctx, prefix+"assignment")
	if err != nil || len(cur.Kvs) != 1 {
		t.Fatalf("read the assignment: %v %v", err, cur)
	}
	forged := first.a
	forged.Endpoint, forged.Reason = "us", "steered"
	forged.Created, forged.Version = cur.Kvs[0].CreateRevision, cur.Kvs[0].Version+1
	b, _ := json.Marshal(forged)
	resp, err := r.cli.Put(r.ctx, prefix+"assignment", string(b))
	if err != nil {
		t.Fatal(err)
	}
	put := time.Now()
	etcdtest.Eventually(t, 5*time.Second, "the trader holds", func() bool {
		st, _ := tr.path.GateState()
		return st == pathdialer.GateHeld
	})
	if took := time.Since(put); took > time.Second {
		t.Fatalf("held %v after the forged record; the lease TTL is 1s", took)
	}
	if a, gen := tr.path.Active(); a.Name == "us" || gen == uint64(resp.Header.Revision) {
		t.Fatalf("the trader followed the forged record: on %s under %d", a.Name, gen)
	}
	if st := tr.f.State(); st.Refused == "" || st.Revision != resp.Header.Revision {
		t.Fatalf("follower state %+v: want the record at %d refused", st, resp.Header.Revision)
	}
	if bad.Load() != 1 {
		t.Fatalf("OnBadRecord called %d times, want 1", bad.Load())
	}
	if st := tr.f.State(); strings.Contains(st.Refused, "replay or a copy") || !strings.Contains(st.Refused, "decider led") {
		t.Fatalf("refused for %q, want the writer check (the decider did not lead then)", st.Refused)
	}
	t.Logf("refused: %s", tr.f.State().Refused)
}

var _ = context.Background
