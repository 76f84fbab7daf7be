package simbroker

import (
	"testing"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/tag"
)

func expectExec(t *testing.T, c *rawFIX, clOrdID, execType, ordStatus string) *quickfix.Message {
	t.Helper()
	m := c.next()
	if mt, _ := m.MsgType(); mt != "8" {
		t.Fatalf("got MsgType %s (%s), want ExecutionReport", mt, m)
	}
	if got := str(t, m, tag.ClOrdID); got != clOrdID {
		t.Fatalf("ClOrdID %q, want %q", got, clOrdID)
	}
	if got := str(t, m, tag.ExecType); got != execType {
		t.Fatalf("%s: ExecType %q, want %q (%s)", clOrdID, got, execType, m)
	}
	if got := str(t, m, tag.OrdStatus); got != ordStatus {
		t.Fatalf("%s: OrdStatus %q, want %q", clOrdID, got, ordStatus)
	}
	return m
}

func TestFIXOrderRoundTripStatusAndMassStatus(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	seq := 1
	c := dialFIX(t, b, "eu", &seq)
	c.logon(false)

	c.newOrder("f-1", "1", "", false) // market
	newER := expectExec(t, c, "f-1", "0", "0")
	fill := expectExec(t, c, "f-1", "F", "2")
	if str(t, fill, tag.LastQty) != "100" || str(t, fill, tag.LastPx) == "" || str(t, fill, tag.OrderID) != str(t, newER, tag.OrderID) {
		t.Fatalf("fill report: %s", fill)
	}
	c.newOrder("f-2", "2", "1.5", false) // limit rests
	if er := expectExec(t, c, "f-2", "0", "0"); str(t, er, tag.LeavesQty) != "100" || str(t, er, tag.Price) != "1.5" {
		t.Fatalf("limit report: %s", er)
	}
	c.newOrder("f-1", "1", "", false) // repeat: existing order's status, nothing booked
	expectExec(t, c, "f-1", "I", "2")

	c.sendRaw("H", func(b *quickfix.Body) { b.SetString(tag.ClOrdID, "f-2"); b.SetString(tag.Side, "1") }, false)
	expectExec(t, c, "f-2", "I", "0")
	c.sendRaw("H", func(b *quickfix.Body) { b.SetString(tag.ClOrdID, "nope"); b.SetString(tag.Side, "1") }, false)
	if er := expectExec(t, c, "nope", "I", "8"); str(t, er, tag.OrdRejReason) != "5" {
		t.Fatalf("unknown order status: %s", er)
	}

	c.sendRaw("AF", func(b *quickfix.Body) {
		b.SetString(tag.MassStatusReqID, "ms-1")
		b.SetString(tag.MassStatusReqType, "7")
	}, false)
	r1 := expectExec(t, c, "f-1", "I", "2")
	r2 := expectExec(t, c, "f-2", "I", "0")
	for i, r := range []*quickfix.Message{r1, r2} {
		wantLast := map[int]string{0: "N", 1: "Y"}[i]
		if str(t, r, tag.MassStatusReqID) != "ms-1" || str(t, r, tag.TotNumReports) != "2" || str(t, r, tag.LastRptRequested) != wantLast {
			t.Fatalf("mass status report %d: %s", i, r)
		}
	}

	if o, ok := b.Order("f-1"); !ok || o.Service != "fix" || o.Region != "eu" || o.Status != StatusFilled {
		t.Fatalf("book f-1 = %+v %v", o, ok)
	}
	log := b.Audit()
	orders := log.Orders()
	if len(orders) != 3 || orders[0].ConnID != "eu/fix/1" || orders[2].Outcome != OutcomeDuplicate {
		t.Fatalf("audit orders = %+v", orders)
	}
	if d := log.Duplicates(); len(d) != 0 || log.Submissions()["f-1"] != 2 {
		t.Fatalf("duplicates %v submissions %v", d, log.Submissions())
	}
	if logons := log.Filter(func(r Record) bool { return r.Kind == KindLogon }); len(logons) != 1 || logons[0].Region != "eu" {
		t.Fatalf("logons = %+v", logons)
	}
	// An empty mass status on a fresh broker answers one report with TotNumReports=0.
	b2 := startBroker(t, nil)
	seq2 := 1
	c2 := dialFIX(t, b2, "us", &seq2)
	c2.logon(false)
	c2.sendRaw("AF", func(b *quickfix.Body) {
		b.SetString(tag.MassStatusReqID, "ms-2")
		b.SetString(tag.MassStatusReqType, "7")
	}, false)
	m := c2.next()
	if str(t, m, tag.TotNumReports) != "0" || str(t, m, tag.LastRptRequested) != "Y" || str(t, m, tag.OrdStatus) != "8" {
		t.Fatalf("empty mass status: %s", m)
	}
}

func TestFIXSequenceContinuesAcrossRegionsAndPossDupIsAudited(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	seq := 1
	eu := dialFIX(t, b, "eu", &seq)
	if got := msgSeq(t, eu.logon(false)); got != 1 {
		t.Fatalf("first logon answered with seq %d", got)
	}
	eu.newOrder("s-1", "2", "1.1", false)
	lastBroker := msgSeq(t, expectExec(t, eu, "s-1", "0", "0"))
	eu.logout()
	waitFor(t, "logout audited", func() bool {
		return len(b.Audit().Filter(func(r Record) bool { return r.Kind == KindLogout })) == 1
	})
	lastBroker++ // the broker's Logout reply

	// Same session through the other region: no reset, both sides continue.
	us := dialFIX(t, b, "us", &seq)
	if got := msgSeq(t, us.logon(false)); got != lastBroker+1 {
		t.Fatalf("logon via us answered with seq %d, want %d (continuous)", got, lastBroker+1)
	}
	us.newOrder("s-2", "1", "", false)
	expectExec(t, us, "s-2", "0", "0")
	expectExec(t, us, "s-2", "F", "2")
	us.newOrder("s-1", "2", "1.1", true) // a PossDup resend of an order booked via eu
	expectExec(t, us, "s-1", "I", "0")

	log := b.Audit()
	if got := log.AcceptedThrough("us", log[0].Time); len(got) != 1 || got[0].ClientOrderID != "s-2" || got[0].ConnID != "us/fix/1" {
		t.Fatalf("AcceptedThrough(us) = %+v", got)
	}
	pd := log.Filter(func(r Record) bool { return r.PossDup })
	if len(pd) != 1 || pd[0].Region != "us" || pd[0].ClientOrderID != "s-1" || pd[0].Outcome != OutcomeDuplicate {
		t.Fatalf("PossDup records = %+v", pd)
	}
}

func TestFIXOnePerCredentialBrokerFencesOldRegion(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.SessionPolicy = SessionOnePerCredential })
	seq := 1
	eu := dialFIX(t, b, "eu", &seq)
	eu.logon(false)
	us := dialFIX(t, b, "us", &seq)
	us.logon(false) // accepted: the broker drops eu first
	eu.expectClosed()
	us.newOrder("o-1", "1", "", false)
	expectExec(t, us, "o-1", "0", "0")

	log := b.Audit()
	fences := log.Filter(func(r Record) bool { return r.Kind == KindFence })
	if len(fences) != 1 || fences[0].Region != "eu" || fences[0].ConnID != "eu/fix/1" {
		t.Fatalf("fence records = %+v", fences)
	}
	logons := log.Filter(func(r Record) bool { return r.Kind == KindLogon })
	if len(logons) != 2 || logons[1].Region != "us" || logons[1].Seq < fences[0].Seq {
		t.Fatalf("logons = %+v", logons)
	}
}

func TestFIXConcurrentPolicyRefusesSecondLogon(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil) // SessionsConcurrent
	seq := 1
	eu := dialFIX(t, b, "eu", &seq)
	eu.logon(false)
	other := seq
	us := dialFIX(t, b, "us", &other)
	us.sendRaw("A", func(bd *quickfix.Body) { bd.SetInt(tag.EncryptMethod, 0); bd.SetInt(tag.HeartBtInt, 5) }, false)
	us.expectClosed() // refused: the client must fence itself
	eu.newOrder("c-1", "1", "", false)
	expectExec(t, eu, "c-1", "0", "0")
	refused := b.Audit().Filter(func(r Record) bool { return r.Kind == KindRefused })
	if len(refused) != 1 || refused[0].Region != "us" {
		t.Fatalf("refused = %+v", refused)
	}
}

func TestFIXUnknownOutcomeThenResendAndPartial(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	if err := b.SetFault("eu", FIX, UnknownOutcome{N: 1}); err != nil {
		t.Fatal(err)
	}
	seq := 1
	eu := dialFIX(t, b, "eu", &seq)
	eu.logon(false)
	eu.newOrder("u-1", "1", "", false)
	eu.expectClosed() // booked, then cut before the ExecutionReport
	if o, ok := b.Order("u-1"); !ok || o.Status != StatusFilled {
		t.Fatalf("u-1 not booked: %+v", o)
	}
	waitFor(t, "session to drop", func() bool {
		return len(b.Audit().Filter(func(r Record) bool { return r.Kind == KindLogout })) == 1
	})
	us := dialFIX(t, b, "us", &seq)
	us.logon(false)
	us.newOrder("u-1", "1", "", true) // resend, PossDup: answered from the book
	expectExec(t, us, "u-1", "I", "2")

	if err := b.SetFault("us", FIX, Partial{}); err != nil {
		t.Fatal(err)
	}
	us.newOrder("p-1", "1", "", false)
	if er := expectExec(t, us, "p-1", "8", "8"); str(t, er, tag.Text) == "" {
		t.Fatalf("partial reject without text: %s", er)
	}
	if _, ok := b.Order("p-1"); ok {
		t.Fatal("order booked under partial")
	}
	log := b.Audit()
	if cut := log.Filter(func(r Record) bool { return r.Outcome == OutcomeCut }); len(cut) != 1 || cut[0].Region != "eu" {
		t.Fatalf("cut records = %+v", cut)
	}
	if d := log.Duplicates(); len(d) != 0 {
		t.Fatalf("Duplicates = %v", d)
	}
	if n := log.Submissions()["u-1"]; n != 2 {
		t.Fatalf("Submissions[u-1] = %d", n)
	}
}
