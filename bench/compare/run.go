package compare

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Report is the outcome of a comparison run.
type Report struct {
	Markdown string        // the table and its notes
	Elapsed  time.Duration // wall time of the whole run
	Errors   []string      // runs that failed to set up (not counted)
	// Medians by row and column ("rest/<peer>/failover_s", "fix/<row>/ack_s",
	// "ws/<row>/missed", ...); a "never" median is absent.
	Medians map[string]float64
}

func (r *Report) put(key string, s *sample) {
	if m, ok := s.median(); ok {
		r.Medians[key] = m
	}
}

// Run measures every row and returns the table.
func Run(o Options) (*Report, error) {
	if o.Runs < 1 {
		o.Runs = 5
	}
	if o.Quick {
		o.Runs = 1
	}
	start := time.Now()
	rep := &Report{Medians: map[string]float64{}}
	fail := func(what string, err error) {
		msg := fmt.Sprintf("%s: %v", what, err)
		rep.Errors = append(rep.Errors, msg)
		o.progress("  ERROR %s", msg)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Measured %s on %d CPUs, %s, median of %d runs per row. Ratio (× bp) = peer ÷ brokerpath: for times > 1 means brokerpath is faster, for orders/s < 1 means the peer is slower, for allocs/order < 1 means the peer allocates less.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.Version(), o.Runs)

	// ---------- REST ----------
	peers := restPeers()
	bpOf := func(i int) int { // brokerpath's row on the same protocol
		for j, p := range peers {
			if p.bp && p.proto == peers[i].proto {
				return j
			}
		}
		return i
	}
	n := len(peers)
	rps, cpu, allocs, tpFail := make([]sample, n), make([]sample, n), make([]sample, n), make([]sample, n)
	fo, foRep := make([]sample, n), make([]sample, n)
	uoRep, uoDup := make([]sample, n), make([]sample, n)
	spRep, spDup := make([]sample, n), make([]sample, n)

	tpDur := ThroughputRun
	if o.Quick {
		tpDur = 300 * time.Millisecond
	}
	o.progress("REST healthy path: %d rows × %d runs × %s, 8 workers, broker in a child process", n, o.Runs, tpDur)
	if a, stop, err := childBroker(); err != nil {
		fail("child broker", err)
	} else {
		clients := make([]*restClient, n)
		for i, p := range peers {
			if clients[i], err = p.build(a); err != nil {
				fail(p.row(), err)
			}
		}
		for r := range o.Runs {
			for k := range peers {
				i := (k + r) % n // rotate the order between runs
				if clients[i] == nil {
					continue
				}
				v, c, al, bad, err := throughput(clients[i], uniq("tp"), 8, tpDur)
				if err != nil {
					fail(peers[i].row()+" throughput", err)
					continue
				}
				rps[i].add(v)
				cpu[i].add(c)
				allocs[i].add(al)
				tpFail[i].add(float64(bad))
				o.progress("  run %d %-46s %8.0f orders/s %6.1f µs CPU/order %6.1f allocs/order %d failed", r+1, peers[i].row(), v, c, al, bad)
			}
		}
		for _, c := range clients {
			if c != nil {
				c.close()
			}
		}
		stop()
	}

	restBound := 10 * time.Second
	if o.Quick {
		restBound = 8 * time.Second
	}
	o.progress("REST failover (blackhole of the primary region, bound %s), unknown outcome (3 of 10 orders booked then cut), slow primary (%s each way)", restBound, SlowDelay)
	for r := range o.Runs {
		for i, p := range peers {
			res, err := restFailover(p, restBound)
			if err != nil {
				fail(p.row()+" failover", err)
				continue
			}
			if res.firstOnBackup < 0 {
				fo[i].miss(restBound)
			} else {
				fo[i].add(res.firstOnBackup.Seconds())
			}
			foRep[i].add(float64(res.repeated))
			rp, dup, err := restUnknownOutcome(p)
			if err != nil {
				fail(p.row()+" unknown outcome", err)
				continue
			}
			uoRep[i].add(float64(rp))
			uoDup[i].add(float64(dup))
			srp, sdup, err := restSlowPrimary(p)
			if err != nil {
				fail(p.row()+" slow primary", err)
				continue
			}
			spRep[i].add(float64(srp))
			spDup[i].add(float64(sdup))
			o.progress("  run %d %-46s first on backup %-8s resent in failover %d; unknown outcome: resent %d, double-booked %d; slow primary: resent %d, double-booked %d",
				r+1, p.row(), durStr(res.firstOnBackup), res.repeated, rp, dup, srp, sdup)
		}
	}

	rt := &table{header: []string{"REST client", "first order accepted on backup after blackhole", "× bp",
		"orders resent (failover / unknown outcome / slow primary)", "would-be duplicate orders (unknown outcome / slow primary)",
		"healthy orders/s", "× bp", "client CPU µs/order", "× bp", "allocs/order", "× bp"}}
	for i, p := range peers {
		b := bpOf(i)
		key := "rest/" + p.row()
		rep.put(key+"/failover_s", &fo[i])
		rep.put(key+"/unknown_resent", &uoRep[i])
		rep.put(key+"/slow_resent", &spRep[i])
		rep.put(key+"/rps", &rps[i])
		rep.put(key+"/cpu_us", &cpu[i])
		okCell := fmtNum(&rps[i], "")
		if m, ok := tpFail[i].median(); ok && m > 0 {
			okCell += fmt.Sprintf(" (%.0f failed)", m)
		}
		rt.add(p.row(), fmtDur(&fo[i]), ratio(&fo[i], &fo[b]),
			fmtNum(&foRep[i], "")+" / "+fmtNum(&uoRep[i], "")+" / "+fmtNum(&spRep[i], ""),
			fmtNum(&uoDup[i], "")+" / "+fmtNum(&spDup[i], ""),
			okCell, ratio(&rps[i], &rps[b]), fmtNum(&cpu[i], ""), ratio(&cpu[i], &cpu[b]), fmtNum(&allocs[i], ""), ratio(&allocs[i], &allocs[b]))
	}

	// ---------- FIX ----------
	type fixRow struct {
		name, reconnect string
		bp              bool
		bound           time.Duration
		parallel        bool
		s, resend       sample
	}
	rows := []*fixRow{
		{name: "quickfix SocketConnectHost1, ReconnectInterval default (30 s)", bound: 75 * time.Second, parallel: true},
		{name: "quickfix SocketConnectHost1, ReconnectInterval 1 s", reconnect: "1", bound: 30 * time.Second},
		{name: "brokerpath transports/fix", bp: true, bound: 30 * time.Second},
	}
	if o.Quick {
		rows = rows[1:]
	}
	for _, row := range rows {
		o.progress("FIX: %s, %d runs%s", row.name, o.Runs, map[bool]string{true: " (concurrently: each run waits ~30 s)", false: ""}[row.parallel])
		record := func(r int, res fixResult, err error) {
			if err != nil {
				fail(row.name, err)
				return
			}
			if res.ack < 0 {
				row.s.miss(row.bound)
			} else {
				row.s.add(res.ack.Seconds())
			}
			row.resend.add(float64(res.resends))
			o.progress("  run %d first ExecutionReport through B %-8s orders resent %d", r+1, durStr(res.ack), res.resends)
		}
		if row.parallel {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for r := range o.Runs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := fixFailover(row.bp, row.reconnect, row.bound)
					mu.Lock()
					record(r, res, err)
					mu.Unlock()
				}()
				time.Sleep(100 * time.Millisecond)
			}
			wg.Wait()
		} else {
			for r := range o.Runs {
				res, err := fixFailover(row.bp, row.reconnect, row.bound)
				record(r, res, err)
			}
		}
	}
	ft := &table{header: []string{"FIX initiator", "blackhole → first ExecutionReport through B", "× bp", "orders resent into B (PossDup)"}}
	bpFix := &rows[len(rows)-1].s
	for _, row := range rows {
		rep.put("fix/"+row.name+"/ack_s", &row.s)
		rep.put("fix/"+row.name+"/resent", &row.resend)
		ft.add(row.name, fmtDur(&row.s), ratio(&row.s, bpFix), fmtNum(&row.resend, ""))
	}

	// ---------- WebSocket ----------
	wsBound := 40 * time.Second
	if o.Quick {
		wsBound = 30 * time.Second
	}
	type wsRow struct {
		name         string
		bp           bool
		t, miss, dup sample
	}
	wrows := []*wsRow{{name: "reconnect loop with exponential backoff (same URL, 10 % jitter, resubscribe; B after 3 failures)"}, {name: "brokerpath ws.Stream", bp: true}}
	for _, row := range wrows {
		o.progress("WebSocket: %s, %d runs", row.name, o.Runs)
		for r := range o.Runs {
			res, err := wsFailover(row.bp, wsBound)
			if err != nil {
				fail(row.name, err)
				continue
			}
			if res.firstFromSurvivor < 0 {
				row.t.miss(wsBound)
			} else {
				row.t.add(res.firstFromSurvivor.Seconds())
			}
			row.miss.add(float64(res.missed))
			row.dup.add(float64(res.dup))
			o.progress("  run %d first message from survivor %-8s ticks missed %d duplicated %d", r+1, durStr(res.firstFromSurvivor), res.missed, res.dup)
		}
	}
	wt := &table{header: []string{"WebSocket client", "blackhole → first message from survivor", "× bp", "ticks missed", "ticks duplicated"}}
	for _, row := range wrows {
		rep.put("ws/"+row.name+"/first_s", &row.t)
		rep.put("ws/"+row.name+"/missed", &row.miss)
		rep.put("ws/"+row.name+"/dup", &row.dup)
		wt.add(row.name, fmtDur(&row.t), ratio(&row.t, &wrows[1].t), fmtNum(&row.miss, ""), fmtNum(&row.dup, ""))
	}

	sb.WriteString("### FIX\n\n" + ft.String() + "\n")
	sb.WriteString("### REST\n\n" + rt.String() + "\n")
	sb.WriteString("### WebSocket\n\n" + wt.String() + "\n")
	sb.WriteString(notes(peers))
	rep.Elapsed = time.Since(start)
	fmt.Fprintf(&sb, "\nWhole run: %s.\n", rep.Elapsed.Round(time.Second))
	if len(rep.Errors) > 0 {
		sb.WriteString("\nRuns that failed to set up (not counted):\n")
		for _, e := range rep.Errors {
			sb.WriteString("- " + e + "\n")
		}
	}
	rep.Markdown = sb.String()
	return rep, nil
}

func durStr(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func notes(peers []restPeer) string {
	var sb strings.Builder
	sb.WriteString("Notes\n\n")
	sb.WriteString("- Every run starts its own simulated broker (two regions `eu`, `us`, one shared book, concurrent session policy: the broker does not fence). " +
		"The fault is `SetFault(eu, svc, Blackhole{})` on rest, probe, ws and fix at once: connections accepted, then silence.\n")
	fmt.Fprintf(&sb, "- brokerpath rows: `pathdialer.DefaultConfig()` with `rest.Probe` on each region's ProbeURL `/v1/account` with the API key, ProbeInterval %s, ProbeTimeout %s, FailureThreshold %d, InflightGrace %s, `LocalFenceOnly`. "+
		"Reconciler: REST — `rest.Reconciler` (GET /v1/orders/{client_order_id} over the new path); FIX — `fix.Reconciler` (OrderStatusRequest), `SequenceContinue`; WebSocket — `NoReconcile` (no orders).\n",
		ProbeInterval, ProbeTimeout, FailureThreshold, InflightGrace)
	fmt.Fprintf(&sb, "- REST rows: every library twice, over HTTP/2 and over HTTP/1.1 (the same `http.Transport` settings with the broker's CA; × bp compares with brokerpath on the same protocol). "+
		"Detection budget: the peers that fail over get %s per attempt, the ProbeTimeout brokerpath's probes have (go-retryablehttp also waits %s–%s between attempts instead of its 1–30 s default), "+
		"so the failover column compares detection, not timeouts. brokerpath's own orders have a %s context: it detects with probes (every %s, DOWN after %d), never by timing orders out.\n",
		PeerAttemptTimeout, PeerRetryWaitMin, PeerRetryWaitMax, AttemptTimeout, ProbeInterval, FailureThreshold)
	for _, p := range peers {
		if p.proto == "HTTP/2" {
			fmt.Fprintf(&sb, "  - %s: %s.\n", p.name, p.config)
		}
	}
	sb.WriteString("- First order accepted on backup: one order at a time, 10 ms apart, a new client order ID each; the time from the blackhole to the first 201/200 answered with `X-Region: us`. " +
		"\"never\" = not within the bound (a client that knows one URL cannot fail over).\n")
	fmt.Fprintf(&sb, "- Orders resent: client order IDs the broker received more than once (`Audit().Submissions()`), in three runs: the failover run; "+
		"the unknown-outcome run (healthy primary, `UnknownOutcome{N: 3}`: 3 of 10 orders booked, then the connection cut before the answer); "+
		"the slow-primary run (5 orders while the primary's trading relay delays every chunk %s each way and its probe relay stays fast: a slow broker, not a dead one). "+
		"Would-be duplicate orders: resends that reached the broker after the order was already booked (audit outcome `duplicate`); "+
		"the simulated broker is idempotent on client_order_id, a broker that is not books each of them as a second order.\n", SlowDelay)
	fmt.Fprintf(&sb, "- Healthy path: 8 goroutines placing orders for %s per run against region eu of a broker in a child process, rows rotated between runs; "+
		"client CPU µs/order = this process's user+system CPU time (getrusage) ÷ orders, the figure that does not depend on how busy the shared machine is; "+
		"allocs/order = this process's heap allocations (runtime.MemStats.Mallocs) ÷ orders; the broker's own are not counted; brokerpath's include its probe monitor (5 probes a second). "+
		"\"failed\" = orders that ended in an error (a peer's %s attempt timeout under load).\n", ThroughputRun, PeerAttemptTimeout)
	sb.WriteString("- Why brokerpath wins where it does: it finds a dead path by probing it (an authenticated request on the trade path) and switches every order at once, instead of each order discovering the failure by timing out; " +
		"and it never sends an order twice: an order whose outcome is unknown (timeout, cut, 5xx) is handed to reconciliation, which asks the broker by client order ID. " +
		"A peer tuned to fail over as fast resends on every timeout, so a merely slow broker gets the same order twice (the slow-primary column), whatever timeout is chosen: " +
		"shorter timeouts fail over sooner and duplicate more. On the healthy path brokerpath costs about what net/http costs (see `make bench-rest` for the exact per-request overhead).\n")
	fmt.Fprintf(&sb, "- FIX: HeartBtInt %s s for every row (quickfix's detection of the silent connection depends on it, and so does the acceptor's release of the blackholed session); "+
		"quickfix peers: `SocketConnectHost/Port` = eu relay, `SocketConnectHost1/Port1` = us relay, memory store. An order every 50 ms while logged on; "+
		"time = first ExecutionReport for an order booked through us. Orders resent = orders the broker received with PossDupFlag=Y or twice "+
		"(quickfix answers the acceptor's ResendRequest with the orders sent into the blackhole). "+
		"The broker does not fence, so its acceptor refuses a logon through us until the blackholed session has timed out (about two heartbeat intervals): every FIX row waits for that. The 30 s rows run concurrently (each waits ~30 s; CPU idle). "+
		"quickfix v0.9.10 leaks a goroutine or two per Stop (see transports/fix tests); a benchmark program tolerates them.\n", fixHeartBtInt)
	fmt.Fprintf(&sb, "- WebSocket: ticks every %s; both clients declare a connection dead after %s of silence and give one connect %s. "+
		"A reconnect loop as usually written has no read timeout and does not reconnect after the socket closes, so it would never notice a blackhole; "+
		"ours adds both and keeps its backoff (base 1 s ×2^attempts, cap 30 s, +0–10 %% jitter, same URL) and switches to B after %d failed connects "+
		"(such loops commonly wait for 10, ≈ 170 s more of backoff; ws.Stream's FailuresBeforeFallback is 3). ws.Stream: DefaultStreamConfig (full jitter 1–60 s) with the same timeouts, following the Path. "+
		"Missed = tick sequence numbers between the first and last received that were never delivered; a snapshot is not a tick. Time = first message (snapshot or tick) from us.\n",
		wsTick, wsSilence, wsDialLimit, seedAttempts)
	return sb.String()
}
