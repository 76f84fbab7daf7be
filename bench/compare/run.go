package compare

import (
	"fmt"
	"os"
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

// restRow is one REST row's failover measurements over its runs.
type restRow struct {
	peer                    restPeer
	fo, foRep, uoRep, uoDup sample
	spRep, spDup            sample
}

// fixRow is one FIX row.
type fixRow struct {
	name, settings string
	bp             bool
	set            Settings
	bound          time.Duration
	parallel       bool
	s, resend      sample
}

// wsRow is one WebSocket row.
type wsRow struct {
	name, settings string
	bp             bool
	set            Settings
	t, miss, dup   sample
}

// Run measures every row and returns the tables.
func Run(o Options) (*Report, error) {
	if o.Runs < 1 {
		o.Runs = 5
	}
	if o.Quick {
		o.Runs = 1
	}
	set := o.Settings
	if set == (Settings{}) {
		set = DefaultSettings()
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	if o.DefaultsAttemptTimeout <= 0 {
		o.DefaultsAttemptTimeout = 150 * time.Millisecond
	}
	def := set.PeerDefaults(o.DefaultsAttemptTimeout)
	start := time.Now()
	load0 := loadAvg()
	rep := &Report{Medians: map[string]float64{}}
	fail := func(what string, err error) {
		msg := fmt.Sprintf("%s: %v", what, err)
		rep.Errors = append(rep.Errors, msg)
		o.progress("  ERROR %s", msg)
	}

	// ---------- REST, healthy path (equal settings) ----------
	peers := restPeers(set)
	bpOf := func(rows []*restRow, proto string) *restRow {
		for _, r := range rows {
			if r.peer.bp && r.peer.proto == proto {
				return r
			}
		}
		return nil
	}
	n := len(peers)
	rps, cpu, allocs, tpFail := make([]sample, n), make([]sample, n), make([]sample, n), make([]sample, n)
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

	// ---------- REST failover, both tables ----------
	restBound := 10 * time.Second
	if o.Quick {
		restBound = 8 * time.Second
	}
	var eqRows, defRows []*restRow
	for _, p := range peers {
		eqRows = append(eqRows, &restRow{peer: p})
	}
	for _, p := range defaultsPeers(def) {
		defRows = append(defRows, &restRow{peer: p})
	}
	restPass := func(label string, rows []*restRow, s Settings) {
		o.progress("REST %s: failover (blackhole of the primary region, bound %s), unknown outcome (3 of 10 orders booked then cut), slow primary (%s each way)", label, restBound, ms(slowDelay(s)))
		for r := range o.Runs {
			for _, row := range rows {
				p := row.peer
				res, err := restFailover(p, restBound)
				if err != nil {
					fail(p.row()+" failover", err)
					continue
				}
				if res.firstOnBackup < 0 {
					row.fo.miss(restBound)
				} else {
					row.fo.add(res.firstOnBackup.Seconds())
				}
				row.foRep.add(float64(res.repeated))
				rp, dup, err := restUnknownOutcome(p)
				if err != nil {
					fail(p.row()+" unknown outcome", err)
					continue
				}
				row.uoRep.add(float64(rp))
				row.uoDup.add(float64(dup))
				srp, sdup, err := restSlowPrimary(p, slowDelay(s))
				if err != nil {
					fail(p.row()+" slow primary", err)
					continue
				}
				row.spRep.add(float64(srp))
				row.spDup.add(float64(sdup))
				o.progress("  run %d %-46s first on backup %-8s resent in failover %d; unknown outcome: resent %d, double-booked %d; slow primary: resent %d, double-booked %d",
					r+1, p.row(), durStr(res.firstOnBackup), res.repeated, rp, dup, srp, sdup)
			}
		}
	}
	restPass("at equal budgets", eqRows, set)
	restPass("peers at their defaults", defRows, def)

	// ---------- FIX ----------
	fixEq := []*fixRow{
		{name: "quickfix SocketConnectHost1", settings: set.quickfixCell(), set: set, bound: 30 * time.Second},
		{name: "brokerpath transports/fix", settings: set.bpCell() + fmt.Sprintf(", HeartBtInt %d s", set.FIXHeartBtInt), bp: true, set: set, bound: 30 * time.Second},
	}
	var fixDef []*fixRow
	if !o.Quick {
		fixDef = []*fixRow{{name: "quickfix SocketConnectHost1", settings: def.quickfixCell(), set: def,
			bound: max(75*time.Second, 3*def.QuickfixReconnect), parallel: def.QuickfixReconnect >= 5*time.Second}}
	}
	for _, row := range append(append([]*fixRow{}, fixEq...), fixDef...) {
		o.progress("FIX: %s (%s), %d runs%s", row.name, row.settings, o.Runs, map[bool]string{true: " (concurrently: each run mostly waits)", false: ""}[row.parallel])
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
				wg.Go(func() {
					res, err := fixFailover(row.bp, row.set, row.bound)
					mu.Lock()
					record(r, res, err)
					mu.Unlock()
				})
				time.Sleep(100 * time.Millisecond)
			}
			wg.Wait()
		} else {
			for r := range o.Runs {
				res, err := fixFailover(row.bp, row.set, row.bound)
				record(r, res, err)
			}
		}
	}

	// ---------- WebSocket ----------
	wsBound := 40 * time.Second
	if o.Quick {
		wsBound = 30 * time.Second
	}
	wsEq := []*wsRow{
		{name: "reconnect loop (same URL, resubscribe, then B)", settings: set.wsLoopCell(), set: set},
		{name: "brokerpath ws.Stream", settings: set.bpCell() + "; follows the Path, resumes from the last sequence", bp: true, set: set},
	}
	var wsDef []*wsRow
	if !o.Quick {
		wsDef = []*wsRow{{name: "reconnect loop (same URL, resubscribe, then B)", settings: def.wsLoopCell(), set: def}}
	}
	for _, row := range append(append([]*wsRow{}, wsEq...), wsDef...) {
		o.progress("WebSocket: %s (%s), %d runs", row.name, row.settings, o.Runs)
		for r := range o.Runs {
			res, err := wsFailover(row.bp, row.set, wsBound)
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

	// ---------- tables ----------
	restTable := func(rows []*restRow, ref func(proto string) *restRow, keyPrefix string) *table {
		t := &table{header: []string{"REST client", "settings",
			"orders resent (failover / unknown outcome / slow primary)", "would-be duplicate orders (unknown outcome / slow primary)",
			"first order accepted on backup after blackhole", "× bp"}}
		for _, row := range rows {
			b := ref(row.peer.proto)
			key := keyPrefix + row.peer.row()
			rep.put(key+"/failover_s", &row.fo)
			rep.put(key+"/failover_resent", &row.foRep)
			rep.put(key+"/unknown_resent", &row.uoRep)
			rep.put(key+"/unknown_dup", &row.uoDup)
			rep.put(key+"/slow_resent", &row.spRep)
			rep.put(key+"/slow_dup", &row.spDup)
			t.add(row.peer.row(), row.peer.settings,
				fmtNum(&row.foRep, "")+" / "+fmtNum(&row.uoRep, "")+" / "+fmtNum(&row.spRep, ""),
				fmtNum(&row.uoDup, "")+" / "+fmtNum(&row.spDup, ""),
				fmtDur(&row.fo), ratio(&row.fo, &b.fo))
		}
		return t
	}
	fixTable := func(rows []*fixRow, bpRow *fixRow, keyPrefix string) *table {
		t := &table{header: []string{"FIX initiator", "settings", "orders resent into B (PossDup)", "blackhole → first ExecutionReport through B", "× bp"}}
		for _, row := range rows {
			rep.put(keyPrefix+row.name+"/ack_s", &row.s)
			rep.put(keyPrefix+row.name+"/resent", &row.resend)
			t.add(row.name, row.settings, fmtNum(&row.resend, ""), fmtDur(&row.s), ratio(&row.s, &bpRow.s))
		}
		return t
	}
	wsTable := func(rows []*wsRow, bpRow *wsRow, keyPrefix string) *table {
		t := &table{header: []string{"WebSocket client", "settings", "ticks missed", "ticks duplicated", "blackhole → first message from survivor", "× bp"}}
		for _, row := range rows {
			rep.put(keyPrefix+row.name+"/first_s", &row.t)
			rep.put(keyPrefix+row.name+"/missed", &row.miss)
			rep.put(keyPrefix+row.name+"/dup", &row.dup)
			t.add(row.name, row.settings, fmtNum(&row.miss, ""), fmtNum(&row.dup, ""), fmtDur(&row.t), ratio(&row.t, &bpRow.t))
		}
		return t
	}
	bpREST := func(proto string) *restRow { return bpOf(eqRows, proto) }
	fixBP, wsBP := fixEq[1], wsEq[1]

	var sb strings.Builder
	load1 := loadAvg()
	fmt.Fprintf(&sb, "Measured %s on %d CPUs, %s, median of %d runs per row; load average (1, 5, 15 min) %s at the start, %s at the end. "+
		"Ratio (× bp) = peer ÷ brokerpath on the same protocol: for times > 1 means brokerpath is faster, < 1 that the peer is.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.Version(), o.Runs, load0, load1)

	sb.WriteString("## At equal budgets: what the design changes\n\n")
	fmt.Fprintf(&sb, "Every peer gets the detection budget brokerpath's probes have (%s): each attempt bounded by %s, a new attempt every %s, "+
		"the dead region given up after %d failed attempts — about %s on a blackhole, the time brokerpath takes to declare it DOWN. "+
		"quickfix reconnects every %s. The settings column says what each row ran with.\n\n",
		set.bpCell(), ms(set.ProbeTimeout), ms(set.ProbeInterval), set.FailureThreshold, ms(set.giveUp()), ms(set.QuickfixReconnect))
	sb.WriteString(headlines(eqRows, bpREST, fixEq, wsEq))
	sb.WriteString("\n### FIX\n\n" + fixTable(fixEq, fixBP, "fix/").String() + "\n")
	sb.WriteString("### REST\n\n" + restTable(eqRows, bpREST, "rest/").String() + "\n")
	sb.WriteString("### WebSocket\n\n" + wsTable(wsEq, wsBP, "ws/").String() + "\n")

	sb.WriteString("## Each peer at its own defaults\n\n")
	fmt.Fprintf(&sb, "The same scenarios with each peer configured as its library ships (see the settings column; the REST peers get a %s attempt timeout, "+
		"which none of them has by default: without one a blackholed region holds every order forever). "+
		"brokerpath's rows are those of the table above (the same settings); × bp compares with them. "+
		"The large ratios here measure the peers' defaults, not the design.\n\n", ms(def.PeerAttemptTimeout))
	if len(fixDef) > 0 {
		sb.WriteString("### FIX\n\n" + fixTable(append(fixDef, fixBP), fixBP, "defaults/fix/").String() + "\n")
	}
	sb.WriteString("### REST (HTTP/2)\n\n" + restTable(append(defRows, bpREST("HTTP/2")), bpREST, "defaults/rest/").String() + "\n")
	if len(wsDef) > 0 {
		sb.WriteString("### WebSocket\n\n" + wsTable(append(wsDef, wsBP), wsBP, "defaults/ws/").String() + "\n")
	}

	sb.WriteString("## Healthy path (equal settings)\n\n")
	ht := &table{header: []string{"REST client", "healthy orders/s", "× bp", "client CPU µs/order", "× bp", "allocs/order", "× bp"}}
	for i, p := range peers {
		b := i
		for j, q := range peers {
			if q.bp && q.proto == p.proto {
				b = j
			}
		}
		key := "rest/" + p.row()
		rep.put(key+"/rps", &rps[i])
		rep.put(key+"/cpu_us", &cpu[i])
		rep.put(key+"/allocs", &allocs[i])
		okCell := fmtNum(&rps[i], "")
		if m, ok := tpFail[i].median(); ok && m > 0 {
			okCell += fmt.Sprintf(" (%.0f failed)", m)
		}
		ht.add(p.row(), okCell, ratio(&rps[i], &rps[b]), fmtNum(&cpu[i], ""), ratio(&cpu[i], &cpu[b]), fmtNum(&allocs[i], ""), ratio(&allocs[i], &allocs[b]))
	}
	sb.WriteString(ht.String() + "\n")
	sb.WriteString(notes(set, def, peers))
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

// headlines states, from the equal-budget medians, what the design changes.
func headlines(rest []*restRow, bpREST func(string) *restRow, fx []*fixRow, wss []*wsRow) string {
	var sb strings.Builder
	sb.WriteString("Headlines (medians of this run):\n\n")
	q, bf := fx[0], fx[1]
	fmt.Fprintf(&sb, "- **FIX**: orders resent into the backup — brokerpath %s, quickfix %s. Blackhole → first ExecutionReport through B: brokerpath %s, quickfix %s (× bp %s).\n",
		fmtNum(&bf.resend, ""), fmtNum(&q.resend, ""), fmtDur(&bf.s), fmtDur(&q.s), ratio(&q.s, &bf.s))
	for _, proto := range []string{"HTTP/2", "HTTP/1.1"} {
		b := bpREST(proto)
		if b == nil {
			continue
		}
		var peersTxt []string
		for _, r := range rest {
			if r.peer.proto != proto || r.peer.bp || r.peer.name == nameBare || strings.HasPrefix(r.peer.name, nameBP) {
				continue
			}
			peersTxt = append(peersTxt, fmt.Sprintf("%s %s / %s resent, first order on B %s (× bp %s)",
				strings.Fields(r.peer.name)[0], fmtNum(&r.uoRep, ""), fmtNum(&r.spRep, ""), fmtDur(&r.fo), ratio(&r.fo, &b.fo)))
		}
		fmt.Fprintf(&sb, "- **REST (%s)**: orders resent after an unknown outcome / to a slow primary — brokerpath %s / %s, first order on B %s; %s.\n",
			proto, fmtNum(&b.uoRep, ""), fmtNum(&b.spRep, ""), fmtDur(&b.fo), strings.Join(peersTxt, "; "))
	}
	l, bw := wss[0], wss[1]
	fmt.Fprintf(&sb, "- **WebSocket**: ticks missed across the switch — brokerpath %s, reconnect loop %s (duplicated %s vs %s). Blackhole → first message from B: brokerpath %s, loop %s (× bp %s).\n",
		fmtNum(&bw.miss, ""), fmtNum(&l.miss, ""), fmtNum(&bw.dup, ""), fmtNum(&l.dup, ""), fmtDur(&bw.t), fmtDur(&l.t), ratio(&l.t, &bw.t))
	return sb.String()
}

// loadAvg is /proc/loadavg's first three fields, or "n/a".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], ", ")
}

func durStr(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func notes(set, def Settings, peers []restPeer) string {
	var sb strings.Builder
	sb.WriteString("## Notes\n\n")
	sb.WriteString("- Every run starts its own simulated broker (two regions `eu` = A, `us` = B, one shared book, concurrent session policy: the broker does not fence). " +
		"The fault is `SetFault(eu, svc, Blackhole{})` on rest, probe, ws and fix at once: connections accepted, then silence.\n")
	fmt.Fprintf(&sb, "- brokerpath rows: `pathdialer.DefaultConfig()` with `rest.Probe` on each region's ProbeURL `/v1/account` with the API key, ProbeInterval %s, ProbeTimeout %s, ProbeJitter 0, FailureThreshold %d, InflightGrace %s, `LocalFenceOnly`. "+
		"Reconciler: REST — `rest.Reconciler` (GET /v1/orders/{client_order_id} over the new path); FIX — `fix.Reconciler` (OrderStatusRequest), `SequenceContinue`; WebSocket — `NoReconcile` (no orders).\n",
		ms(set.ProbeInterval), ms(set.ProbeTimeout), set.FailureThreshold, ms(set.InflightGrace))
	fmt.Fprintf(&sb, "- Equal budget, REST: every attempt of every peer is bounded by %s (the ProbeTimeout); failsafe-go retries %d time(s) %s apart on A, then its Fallback sends to B "+
		"(its CircuitBreaker opens after %d failures, so later orders go to B at once); go-retryablehttp makes %d attempt(s) on A, waiting %s–%s, then PrepareRetry aims its retries at B. "+
		"Each peer's attempts on A thus take as long as brokerpath's %d failed probes. brokerpath's own orders have a %s context: it detects with probes, never by timing orders out; "+
		"the second brokerpath row gives its orders the peers' %s (a timed-out order is an unknown outcome, reconciled and never resent; the caller's own deadline is not reported as a path failure).\n",
		ms(set.PeerAttemptTimeout), set.FailsafeAttempts-1, ms(set.FailsafeDelay), set.FailsafeBreaker, set.RetryableAttempts, ms(set.RetryableWaitMin), ms(set.RetryableWaitMax),
		set.FailureThreshold, ms(set.OrderTimeout), ms(set.PeerAttemptTimeout))
	for _, p := range peers {
		if p.proto == "HTTP/2" {
			fmt.Fprintf(&sb, "  - %s: %s.\n", p.name, p.config)
		}
	}
	fmt.Fprintf(&sb, "- Equal budget, FIX: HeartBtInt %d s for every row (quickfix's detection of the silent connection depends on it, and so does the acceptor's release of the blackholed session); "+
		"quickfix reconnects every %s (brokerpath's probe cadence; its default is 30 s).\n", set.FIXHeartBtInt, ms(set.QuickfixReconnect))
	fmt.Fprintf(&sb, "- Equal budget, WebSocket: the reconnect loop's silent connection is its first failed attempt (no message for %s, two ticks), then it reconnects to the same URL "+
		"with %s per connect and %s between, and switches to B after %d failed connects: %d failed attempts, one every %s, as brokerpath's probes. "+
		"ws.Stream follows the Path (its own ping timeout is %s and connect limit %s in every table).\n",
		ms(set.WSSilence), ms(set.WSConnectTimeout), ms(set.WSBackoffBase), set.WSSwitchAfter, set.WSSwitchAfter+1, ms(set.ProbeInterval), ms(wsStreamSilence), ms(wsStreamDialLimit))
	fmt.Fprintf(&sb, "- Defaults table: quickfix %s; failsafe-go %s; go-retryablehttp %s; reconnect loop %s. "+
		"A reconnect loop as usually written has no read timeout and does not reconnect after the socket closes, so it would never notice a blackhole; ours adds both. "+
		"Such loops commonly switch after 10 failed connects (≈ 170 s more of backoff); this one switches after %d, as ws.Stream's FailuresBeforeFallback.\n",
		def.quickfixCell(), def.failsafeCell(), def.retryableCell(), def.wsLoopCell(), def.WSSwitchAfter)
	sb.WriteString("- First order accepted on backup: one order at a time, 10 ms apart, a new client order ID each; the time from the blackhole to the first 201/200 answered with `X-Region: us`. " +
		"\"never\" = not within the bound (a client that knows one URL cannot fail over).\n")
	fmt.Fprintf(&sb, "- Orders resent: client order IDs the broker received more than once (`Audit().Submissions()`), in three runs: the failover run; "+
		"the unknown-outcome run (healthy primary, `UnknownOutcome{N: 3}`: 3 of 10 orders booked, then the connection cut before the answer); "+
		"the slow-primary run (5 orders while the primary's trading relay delays every chunk %s each way and its probe relay stays fast: a slow broker, not a dead one). "+
		"Would-be duplicate orders: resends that reached the broker after the order was already booked (audit outcome `duplicate`); "+
		"the simulated broker is idempotent on client_order_id, a broker that is not books each of them as a second order.\n", ms(slowDelay(set)))
	fmt.Fprintf(&sb, "- Healthy path: 8 goroutines placing orders for %s per run against region eu of a broker in a child process, rows rotated between runs; "+
		"client CPU µs/order = this process's user+system CPU time (getrusage) ÷ orders, the figure that does not depend on how busy the shared machine is; "+
		"allocs/order = this process's heap allocations (runtime.MemStats.Mallocs) ÷ orders; the broker's own are not counted; brokerpath's include its probe monitor. "+
		"\"failed\" = orders that ended in an error (a peer's %s attempt timeout under load).\n", ms(ThroughputRun), ms(set.PeerAttemptTimeout))
	sb.WriteString("- FIX: quickfix peers: `SocketConnectHost/Port` = eu relay, `SocketConnectHost1/Port1` = us relay, memory store. An order every 50 ms while logged on; " +
		"time = first ExecutionReport for an order booked through us. Orders resent = orders the broker received with PossDupFlag=Y or twice " +
		"(quickfix answers the acceptor's ResendRequest with the orders sent into the blackhole). " +
		"The broker does not fence, so its acceptor refuses a logon through us until the blackholed session has timed out (about two heartbeat intervals): every FIX row waits for that. " +
		"Rows with a reconnect interval of 5 s or more run their runs concurrently (each mostly waits; CPU idle). " +
		"quickfix v0.9.10 leaks a goroutine or two per Stop; a benchmark program tolerates them.\n")
	fmt.Fprintf(&sb, "- WebSocket: ticks every %s. Missed = tick sequence numbers between the first and last received that were never delivered; a snapshot is not a tick. "+
		"Time = first message (snapshot or tick) from us.\n", ms(wsTick))
	return sb.String()
}
