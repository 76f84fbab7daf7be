# brokerpath make targets. `make test` is what CI runs (.ci/run) and what the README names.
GO      ?= go
PKGS    ?= ./...
GOFILES  = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './vendor/*')

.PHONY: test fmt-check vet unit bench lint vet-bench determinism

## test: gofmt check, go vet, the whole suite under the race detector, the
## coord/etcd module's suite (embedded etcd), the broker SDK examples'
## module (examples/sdk), and a vet of the bench module.
## Each step announces itself and its time; every step runs even after one
## fails, and the last line lists what failed. The suite's timeouts are sized
## from the scheduling delay measured before it (unit-budgeted): on a host
## too starved to judge, a package that times out is reported as such
## (INCONCLUSIVE), not as a failure of the code; make test still exits
## non-zero then, since nothing was shown to pass.
TEST_STEPS = fmt-check vet unit-budgeted determinism sim-fix test-coord test-sdk vet-bench
test:
	@began=$$(date +%s); failed=; starved=; \
	for s in $(TEST_STEPS); do \
	  t0=$$(date +%s); echo "test: $$s ... (at $$(( t0 - began )) s)"; \
	  v=$$(mktemp); TEST_VERDICT=$$v $(MAKE) --no-print-directory $$s; rc=$$?; took=$$(( $$(date +%s) - t0 )); \
	  [ $$rc != 0 ] && [ "$$(cat $$v)" = inconclusive ] && rc=3; rm -f $$v; \
	  case $$rc in \
	    0) echo "test: $$s ok in $$took s";; \
	    3) echo "test: $$s INCONCLUSIVE in $$took s (the host was too starved to judge; see above)"; starved="$$starved $$s";; \
	    *) echo "test: $$s FAILED (exit $$rc) after $$took s"; failed="$$failed $$s";; \
	  esac; \
	done; \
	total=$$(( $$(date +%s) - began )); \
	if [ -n "$$failed" ]; then echo "test: FAILED in $$total s:$$failed$${starved:+ (inconclusive:$$starved)}"; exit 1; fi; \
	if [ -n "$$starved" ]; then echo "test: INCONCLUSIVE in $$total s: the host was too starved to judge$$starved; everything else passed"; exit 1; fi; \
	echo "test: ok in $$total s"

# unit-budgeted: `unit` with each package's timeout sized from the scheduling
# delay measured for 3 s before the run (internal/schedlag: UNIT_TIMEOUT
# seconds, 540 as `unit` has, times how many times longer busy work takes on this host, 1 to 6),
# and the delay measured beside the whole run. A package that times out on a
# host where a busy goroutine got less than half a CPU is reported as the
# host being too starved to judge it (exit 3), with the figures; any other
# failure fails (exit 1).
UNIT_TIMEOUT ?= 540
.PHONY: unit-budgeted
unit-budgeted:
	@d=$$(mktemp -d); trap 'rm -rf $$d' EXIT; \
	$(GO) build -o $$d/schedlag ./internal/schedlag || exit 2; \
	fig=$$($$d/schedlag -for 3s); f=$$(echo "$$fig" | sed -n 's/.*factor=\([0-9]*\).*/\1/p'); \
	to=$$(( $(UNIT_TIMEOUT) * $${f:-1} )); \
	echo "unit: before the run, $$fig: each package's timeout $(UNIT_TIMEOUT) s × $${f:-1} = $$to s"; \
	echo "unit: $$($(GO) list $(PKGS) | wc -l) packages under -race; the build comes first, then one line per package as it finishes"; \
	$$d/schedlag -out $$d/lag & lp=$$!; \
	{ $(GO) test -race -count=1 -timeout $${to}s $(PKGS); echo $$? >$$d/rc; } 2>&1 | tee $$d/log; \
	kill -TERM $$lp; wait $$lp; rc=$$(cat $$d/rc); lagfig=$$(cat $$d/lag 2>/dev/null); \
	echo "unit: over the run, $$lagfig"; \
	[ "$$rc" = 0 ] && exit 0; \
	timedout=$$(awk '/^panic: test timed out/ { t = 1 } /^FAIL\t/ && NF >= 3 { if (t) print $$2; t = 0 } /^ok\t/ { t = 0 }' $$d/log | sort -u | tr '\n' ' '); \
	others=$$(awk '/^FAIL\t/ && NF >= 3 { print $$2 }' $$d/log | sort -u | while read -r p; do case " $$timedout " in *" $$p "*) ;; *) printf '%s ' "$$p";; esac; done); \
	share=$$(echo "$$lagfig" | sed -n 's/.*got \([0-9]*\)% of a CPU.*/\1/p'); \
	if [ -n "$$timedout" ] && [ -z "$$others" ] && [ "$${share:-100}" -lt 50 ]; then \
	  echo "unit: INCONCLUSIVE: $$timedout timed out after $$to s while a busy goroutine got $$share% of a CPU: this host was too starved to judge them (not a failure of the code). Rerun them on a quieter host: $(GO) test -race -count=1 $$timedout"; \
	  [ -n "$$TEST_VERDICT" ] && echo inconclusive >"$$TEST_VERDICT"; exit 3; fi; \
	echo "unit: FAILED: $${others}$${timedout:+(timed out after $$to s: $$timedout)}"; exit 1

# determinism: the simulation's replay tests, built without the race detector
# (under -race the scheduler randomizes the order of goroutines made ready at
# one instant on purpose, see internal/dst/doc.go); unit runs the rest of the
# package, sweeps included, under -race. Both builds: the ordinary one and the
# one with the seeded yield points (-tags dstyield, the build make sim sweeps),
# whose TestSimYieldDeterministic also replays seeds after shifting the
# scheduler's state a process carries from seed to seed.
determinism:
	$(GO) test -count=1 -run 'Deterministic' ./internal/dst
	$(GO) test -count=1 -tags dstyield -run 'Deterministic' ./internal/dst
	@d=$$(mktemp -d); mf=$$($(GO) run ./internal/dst/qfhook -out=$$d) || { rm -rf $$d; exit 2; }; \
	$(GO) test -count=1 -tags dstfix -modfile=$$mf -run 'TestSimFIXDeterministic' ./internal/dst; s=$$?; rm -rf $$d; exit $$s

# sim-fix: the FIX seeds' build (-tags dstfix, the patched quickfix of
# internal/dst/qfhook given with -modfile; see internal/dst's documentation,
# "FIX") under the race detector: four FIX seeds and the FIX checks' own
# tests.
.PHONY: sim-fix
sim-fix:
	@d=$$(mktemp -d); mf=$$($(GO) run ./internal/dst/qfhook -out=$$d) || { rm -rf $$d; exit 2; }; \
	$(GO) test -race -count=1 -tags dstfix -modfile=$$mf -run 'TestSimFIX$$|TestFIX' ./internal/dst; s=$$?; rm -rf $$d; exit $$s

# check: a change's inner loop, under 2 minutes on a busy 2-core host with a
# warm build cache (measured: see README, "Make targets"): gofmt, go vet, and
# the unit tests of every package except the long ones, without the race
# detector. Left to `make test`: the end-to-end and chaos tests
# (integration/...), the simulation's sweeps (internal/dst), the demo and the
# quick start (examples/...), and transports/fix (about 110 s of real-time
# FIX sessions). CHECK_SKIP lists the skipped packages (a regular expression
# on import paths); CHECK_FLAGS adds go test flags (CHECK_FLAGS=-race).
CHECK_SKIP  ?= /integration$$|/integration/chaos$$|/internal/dst$$|/examples/orderclient$$|/examples/quickstart$$|/transports/fix$$
CHECK_FLAGS ?=

.PHONY: check
check:
	@began=$$(date +%s); \
	step() { s=$$(date +%s); echo "check: $$1 ..."; shift; "$$@"; rc=$$?; \
	  if [ $$rc = 0 ]; then echo "check: ok in $$(( $$(date +%s) - s )) s"; else echo "check: FAILED (exit $$rc) after $$(( $$(date +%s) - s )) s"; fi; return $$rc; }; \
	step "gofmt" $(MAKE) --no-print-directory fmt-check && \
	step "go vet" $(GO) vet $(PKGS) && \
	pkgs=$$($(GO) list $(PKGS) | grep -v -E '$(CHECK_SKIP)') && \
	step "unit tests of $$(echo "$$pkgs" | wc -l) packages (not: integration, internal/dst, examples, transports/fix; make test runs them)" \
	  $(GO) test -count=1 $(CHECK_FLAGS) $$pkgs; rc=$$?; \
	echo "check: $$([ $$rc = 0 ] && echo ok || echo FAILED) in $$(( $$(date +%s) - began )) s"; exit $$rc

vet-bench:
	cd bench && $(GO) vet ./...

fmt-check:
	@out="$$(gofmt -l $(GOFILES))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 -timeout 9m $(PKGS)

## bench: every benchmark, allocations reported, no unit tests.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

## lint: gofmt, go vet, and staticcheck-style checks that ship with the toolchain.
lint: fmt-check vet
	$(GO) mod verify

# --- observe ---
# status-screenshot: serve the status page for a Path on the simulated broker
# (orders every 100 ms over REST, a price stream; region eu cut off after 2 s),
# wait for the failover, then render the page in headless Chromium: the DOM it
# renders must show the figures on-call needs (time to detect, time to switch,
# time held, orders per transport, ticks missed, the failback waiting for eu,
# links to the JSON and metrics) and no raw Go duration; the screenshot goes
# to reports/status.png and must be non-trivial.
# NOT part of `make test`: it installs Debian's chromium with apt-get when it is
# missing, which needs root and network access to the apt mirrors.
STATUS_PNG     ?= reports/status.png
STATUS_DOM     ?= reports/status.dom.html
STATUS_MIN_KB  ?= 20
CHROMIUM       ?= chromium
CHROMIUM_FLAGS  = --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync

.PHONY: status-screenshot
status-screenshot:
	@command -v $(CHROMIUM) >/dev/null 2>&1 || { \
	  echo "status-screenshot: installing chromium (needs root and apt)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@mkdir -p reports
	@rm -f $(STATUS_PNG) $(STATUS_DOM)
	$(GO) build -o reports/statusdemo ./internal/statusdemo
	@set -e; tmp=$$(mktemp -d); \
	reports/statusdemo -addr 127.0.0.1:0 -outage 2s -for 60s -url-file $$tmp/url >$$tmp/demo.log 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null; rm -rf $$tmp' EXIT; \
	for i in $$(seq 1 100); do [ -s $$tmp/url ] && break; kill -0 $$pid || { cat $$tmp/demo.log; exit 1; }; sleep 0.1; done; \
	url=$$(cat $$tmp/url); echo "status-screenshot: $$url (waiting for the failover to be released)"; \
	for i in $$(seq 1 150); do \
	  curl -fsS "$${url}status.json" >$$tmp/status.json && grep -q '"switches": 1' $$tmp/status.json && grep -q '"released_at"' $$tmp/status.json && break; \
	  sleep 0.1; done; \
	grep -q '"released_at"' $$tmp/status.json || { echo "status-screenshot: no failover released"; cat $$tmp/status.json; exit 1; }; \
	sleep 1; \
	$(CHROMIUM) $(CHROMIUM_FLAGS) --user-data-dir=$$tmp/profile --dump-dom "$$url" >$(STATUS_DOM) 2>$$tmp/chromium.log \
	  || { cat $$tmp/chromium.log; exit 1; }; \
	fail=0; \
	for want in '<b id="active">us</b>' \
	  'id="time-to-detect">[0-9.]+ (ms|s)<' 'id="time-to-switch">[0-9.]+ (ms|s)<' 'id="time-held">[0-9.]+ (ms|s)<' \
	  'id="reconciled">(fix|rest) [0-9]+' '<td><b>rest</b></td>' '<td><b>fix</b></td>' 'id="ticks-missed">[0-9]+<' \
	  'waiting for eu to recover' 'href="status.json">JSON<' 'href="/metrics">metrics<' 'CUT OFF'; do \
	  grep -Eq "$$want" $(STATUS_DOM) || { echo "status-screenshot: the rendered page lacks /$$want/"; fail=1; }; \
	done; \
	if grep -Eo '[0-9]+\.[0-9]{3,}(ms|s)|[0-9]+m[0-9]+(\.[0-9]+)?s' $(STATUS_DOM) | head -3 | grep .; then \
	  echo "status-screenshot: raw Go durations on the page (above)"; fail=1; fi; \
	[ $$fail = 0 ] || exit 1; \
	$(CHROMIUM) $(CHROMIUM_FLAGS) --user-data-dir=$$tmp/profile --screenshot=$(STATUS_PNG) --window-size=1200,1400 "$$url" >$$tmp/chromium.log 2>&1 \
	  || { cat $$tmp/chromium.log; exit 1; }; \
	size=$$(stat -c %s $(STATUS_PNG) 2>/dev/null || echo 0); \
	if [ "$$size" -lt $$(( $(STATUS_MIN_KB) * 1024 )) ]; then \
	  echo "status-screenshot: $(STATUS_PNG) is $$size bytes (< $(STATUS_MIN_KB) KB)"; exit 1; fi; \
	echo "status-screenshot: the page shows every figure checked; $(STATUS_PNG) ($$size bytes), DOM in $(STATUS_DOM)"
# --- end observe ---

# --- sdk ---
# examples/sdk is its own Go module (the venues' SDKs, go-binance and
# alpaca-trade-api-go, stay out of the core). test-sdk runs its programs on
# the real SDKs against venue-shaped stubs (two TLS regions, one book that
# never deduplicates); it needs only the Go module proxy.
.PHONY: test-sdk
test-sdk:
	cd examples/sdk && $(GO) vet ./... && $(GO) test -race -count=1 ./...
# --- end sdk ---

# --- coord ---
# coord/etcd is its own Go module (etcd stays out of the core). test-coord runs
# its suite against a real embedded etcd on loopback; drill-coord builds the
# three-process drill (see coord/etcd/README.md for running it on a cluster).
.PHONY: test-coord drill-coord
test-coord:
	cd coord/etcd && $(GO) vet ./... && $(GO) test -race -count=1 ./...

drill-coord:
	cd coord/etcd && $(GO) build -o ../../reports/coorddrill ./cmd/coorddrill
	@echo "drill-coord: built reports/coorddrill. Start one simulated broker and an etcd, then one"
	@echo "process per role against them (full commands and expected lines: coord/etcd/README.md):"
	@echo "  go run ./cmd/simbroker -admin 127.0.0.1:7070 -api-key drill-key"
	@echo "  reports/coorddrill -role etcd -listen 127.0.0.1:2379 -peer 127.0.0.1:2380   # or an existing cluster"
	@echo "  BROKER_API_KEY=drill-key reports/coorddrill -role monitor -region eu -etcd 127.0.0.1:2379 -sim-admin 127.0.0.1:7070"
	@echo "  BROKER_API_KEY=drill-key reports/coorddrill -role decider -region eu -etcd 127.0.0.1:2379 -sim-admin 127.0.0.1:7070"
	@echo "  BROKER_API_KEY=drill-key reports/coorddrill -role trader  -region us -etcd 127.0.0.1:2379 -sim-admin 127.0.0.1:7070"

# test-etcd-real: the coordination against real etcd processes (NOT part of
# make test). Installs Debian's etcd-server with apt-get when $(ETCD_BIN) is
# missing, then runs the tests built with -tags realetcd: each starts three
# etcd members from $(ETCD_BIN) on free loopback ports (memory-backed data
# directories), freezes one member with SIGSTOP (the raft follower, then the
# raft leader; then kills the leader) for 12 s with a switch in the middle,
# judges stale grants from etcd's own history of the assignment, and stops
# every member by PID. First under -race with N=20 followers, then the scale
# runs (no -race) for each N in ETCD_REAL_N; prints one "figures:" line per
# run. Each run fails on a follower halt, a stale grant, a lost decider term,
# an acknowledgement gone back after the thaw or a p99 over the bound.
ETCD_BIN    ?= /usr/bin/etcd
ETCD_REAL_N ?= 100 300
# p99 bound (ms) from a fence or an active record to every follower acting on
# it: 1000 up to N=100; above, ETCD_REAL_SCALE_BOUND_MS (on a shared 2-core
# machine N=300 measured up to 1.97 s).
ETCD_REAL_SCALE_BOUND_MS ?= 2500
SUDO        ?= $(shell [ "$$(id -u)" = 0 ] || echo sudo)
.PHONY: test-etcd-real
test-etcd-real:
	@if [ ! -x "$(ETCD_BIN)" ]; then \
	  echo "test-etcd-real: $(ETCD_BIN) missing: installing Debian's etcd-server"; \
	  $(SUDO) apt-get update && $(SUDO) apt-get install -y etcd-server || exit 1; fi
	@$(ETCD_BIN) --version | head -1
	cd coord/etcd && $(GO) vet -tags realetcd ./...
	@cd coord/etcd && for run in race:20 $(foreach n,$(ETCD_REAL_N),plain:$(n)); do \
	  mode=$${run%%:*}; n=$${run##*:}; flags=; [ $$mode = race ] && flags=-race; \
	  log=$${TMPDIR:-/tmp}/test-etcd-real.$$mode.$$n.log; \
	  echo "test-etcd-real: N=$$n $$flags (log $$log)"; \
	  bound=1000; [ $$n -gt 100 ] && bound=$(ETCD_REAL_SCALE_BOUND_MS); \
	  BROKERPATH_ETCD_BIN=$(ETCD_BIN) BROKERPATH_REALETCD_N=$$n BROKERPATH_REALETCD_BOUND_MS=$$bound $(GO) test -tags realetcd $$flags -count=1 -timeout 20m -run 'TestRealEtcd' -v . >$$log 2>&1; \
	  rc=$$?; grep -E '^figures:' $$log; \
	  if [ $$rc != 0 ]; then grep -E -- '--- FAIL|realetcd_test.go' $$log | tail -20; echo "test-etcd-real: FAILED at N=$$n"; exit 1; fi; done
	@echo "test-etcd-real: ok"
# --- end coord ---

# --- drill ---
# drill: a game day against the embedded simulated broker (blackhole on eu, a
# population of extra WebSocket clients, a handshake budget) that writes a
# self-contained HTML report (package observe/drill). DRILL_ARGS adds demo
# flags, e.g. DRILL_ARGS='-fault both' or DRILL_ARGS='-config broker.json'.
DRILL_REPORT ?= reports/drill.html
DRILL_ARGS   ?=

.PHONY: drill
drill:
	@mkdir -p $(dir $(DRILL_REPORT))
	$(GO) run ./examples/orderclient -report $(DRILL_REPORT) $(DRILL_ARGS)
	@echo "drill: report written to $(DRILL_REPORT)"
# --- end drill ---

# --- bench-compare ---
# bench-compare: brokerpath against the peers a user would pick instead
# (quickfix multi-host failover, net/http, failsafe-go, go-retryablehttp,
# a WebSocket reconnect loop) on the simulated broker, median of 5
# runs per row: first every peer at the detection budget brokerpath's probes
# have (the headline: orders resent, ticks missed, time at equal budget), then
# every peer at its own defaults. Markdown on stdout, also written to
# bench/RESULTS.md. Its own module (bench/), so the peers stay out of the
# library's dependencies. Takes about 10 minutes; NOT part of `make test`.
# What each row measures: bench/README.md.
# BENCH_COMPARE_ARGS e.g. '-runs 3' or '-probe-interval 100ms -probe-timeout 80ms -failures 2'
# (the peers follow the probe settings; `cd bench && go run ./cmd/compare -h` lists every flag).
BENCH_COMPARE_ARGS ?= -runs 5

.PHONY: bench-compare
bench-compare:
	cd bench && $(GO) run ./cmd/compare $(BENCH_COMPARE_ARGS) -out RESULTS.md
# --- end bench-compare ---

# --- bench-rest ---
# bench-rest: rest.Transport against two bare, identically configured
# http.Transports: client CPU time per request (getrusage; the servers run in a
# child process) and allocations per request, for {HTTP/1.1, HTTP/2} × {1, 32
# clients} × {POST order, GET read}. Each cell runs 240 rounds of six 25 ms
# phases, A P B B P A (A, B bare, P brokerpath; the order rotates), and gives
# bare ÷ brokerpath and the control A ÷ B (trimmed geometric mean of the
# rounds, 95 % interval), and whether the goal 0.97 is shown, missed or not
# resolved. In the same rounds (then ten phases), failsafe-go's failsafehttp
# RoundTripper and go-retryablehttp's RoundTripper, each over a bare transport:
# a second table gives bare ÷ peer and peer ÷ brokerpath per cell. Prints two
# tables; about 10 minutes (5½ with -peers=false). NOT part of `make test`.
# BENCH_REST_ARGS e.g. '-rounds 480' or '-cell "h1 POST"' or '-dump phases.csv' or '-p copy' or '-peers=false'.
BENCH_REST_ARGS ?=

.PHONY: bench-rest
bench-rest:
	cd bench && $(GO) run ./cmd/restparity $(BENCH_REST_ARGS)
# --- end bench-rest ---

# --- bench-detect ---
# bench-detect: fault → first order booked on the backup, rest.Transport on
# the simulated broker, 7 runs per fault (a blackhole with orders flowing and
# without, a refused and reset connection with orders flowing), at 100 ms
# probes, 80 ms timeout, DOWN after 2 failures; about 30 seconds. Then the same
# with suspicion off, for comparison. bench-soak: 10 minutes of orders with no
# fault, counting spurious failovers; bench-soak-idle: the same with no orders
# at all (only the probes decide). NOT part of `make test`.
# BENCH_DETECT_ARGS e.g. '-runs 15 -probe-interval 200ms -probe-timeout 150ms -failures 3'.
BENCH_DETECT_ARGS ?=

.PHONY: bench-detect bench-soak bench-soak-idle
bench-detect:
	cd bench && $(GO) run ./cmd/detect $(BENCH_DETECT_ARGS) && $(GO) run ./cmd/detect -suspect-after=-1ms $(BENCH_DETECT_ARGS)
bench-soak:
	cd bench && $(GO) run ./cmd/detect -soak 10m $(BENCH_DETECT_ARGS)
bench-soak-idle:
	cd bench && $(GO) run ./cmd/detect -soak 10m -idle $(BENCH_DETECT_ARGS)
# --- end bench-detect ---

# --- chaos ---
# chaos: the randomized run (integration/chaos) over a matrix of simulated-
# broker policies: REST, FIX and a WebSocket stream against a three-region
# simulated broker while a seeded schedule of random faults runs, the same
# schedule once per policy (book deduplication none / open-only / across,
# broker-side fence none / enforced, fencing tokens off / checked). It prints
# one table: per policy, orders, faults, duplicates, losses, two-live-path
# orders, late landings (reported / unreported), halts. A fresh seed is
# printed first; replay one with `make chaos SEED=n`; one cell with
# CHAOS_POLICIES='dedup=none,fence=enforced'. Not part of `make test`.
# integration: only the end-to-end tests (they also run in `make test`).
SEED           ?= 0
CHAOS_ORDERS   ?= 2000
CHAOS_FAULTS   ?= 30
CHAOS_POLICIES ?= matrix

.PHONY: chaos integration
chaos:
	@seed=$(SEED); if [ "$$seed" = "0" ]; then seed=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); fi; \
	echo "make chaos: seed $$seed"; \
	$(GO) run ./integration/chaos -seed $$seed -orders $(CHAOS_ORDERS) -faults $(CHAOS_FAULTS) -policies '$(CHAOS_POLICIES)'

integration:
	$(GO) test -race -count=1 -timeout 5m ./integration/...

# chaos-venues: the same randomized run once per shipped venue profile
# (venue.Shipped), the simulated broker playing the profile
# (simbroker.FromVenue: deduplication scope and window, lookup lag, lookup
# rate limits, fence, FIX lockout after a drop) with venue time
# CHAOS_VENUE_SCALE times faster, the client judging by the same profile with
# the Path's default quarantine, and copies held twice by a blackhole longer
# than that quarantine. One row per profile: orders, faults, resends allowed,
# booked twice, late landings (reported / after final / unreported), the longest
# from when the venue's lookups could show a landing before a final verdict
# (its booking plus the played lookup lag) to its report (target: MaxCopyHold +
# the profile's lookup interval), halts.
# CHAOS_VENUES picks some (CHAOS_VENUES=binance-spot,alpaca). Not part of
# `make test`.
CHAOS_VENUES      ?= all
CHAOS_VENUE_SCALE ?= 60

.PHONY: chaos-venues
chaos-venues:
	@seed=$(SEED); if [ "$$seed" = "0" ]; then seed=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); fi; \
	echo "make chaos-venues: seed $$seed"; \
	$(GO) run ./integration/chaos -seed $$seed -orders $(CHAOS_ORDERS) -faults $(CHAOS_FAULTS) -venues '$(CHAOS_VENUES)' -venue-scale $(CHAOS_VENUE_SCALE)
# --- end chaos ---

# --- core ---
# jepsen: the process-level test of the shared decision (coord/etcd/cmd/coordjepsen):
# eleven processes, three etcd members, the simulated broker (cmd/simbroker,
# built on the fly; tokens checked, then off), three observers, two deciders
# and two traders (transports/rest with the token header); traders paused
# across their lease's expiry during switches, the etcd leader and the leading
# decider killed, quorum lost and restored; checked from the broker's audit;
# prints one table. A short version (4 iterations a mode) runs in make test
# through test-coord. JEPSEN_ITERATIONS / JEPSEN_SEED to vary.
JEPSEN_ITERATIONS ?= 20
JEPSEN_SEED       ?= 1
.PHONY: jepsen bench-gate
jepsen:
	cd coord/etcd && $(GO) run ./cmd/coordjepsen -iterations $(JEPSEN_ITERATIONS) -seed $(JEPSEN_SEED)

# bench-gate: the submission gate's costs (Acquire+Done, caller-owned tickets,
# 64 submitters, with a decision deadline) and the switch's hand-off of 100,000
# tickets in flight beside its floor (copying their fields), in one run.
bench-gate:
	$(GO) test -run '^$$' -bench 'Acquire|SwitchHandOff' -benchtime=1s -count=3 ./pathdialer/
# --- end core ---

# --- sim ---
# sim: the deterministic simulation (internal/dst): the runtime, the REST
# transport and the WebSocket stream with the simulated broker in one
# testing/synctest bubble over an in-memory network, SIM_SEEDS seeded fault
# schedules from SIM_START, each checked against the order-safety invariants.
# A failing seed prints the one command that replays it and writes its trace.
# SIM_ARGS=-sim.resend resends orders settled NOT_RECEIVED (duplicates on a
# broker that does not deduplicate); SIM_ARGS=-sim.twice runs every seed twice
# and fails a seed whose two traces differ. Each test process runs on one P
# (the trace of a seed is then the same in every run, see internal/dst's
# documentation); the seeds are split over SIM_SHARDS processes run side by
# side (-sim.shard=i/n). SIM_BUILD adds build flags (SIM_BUILD=-race; give a
# replay the same). `make test` runs a short sweep through the ordinary unit
# tests. SIM_COMPOSED=1 (the default here) adds the composed moves to every
# seed (-sim.composed: late probes, probes cut by Start, hanging settles,
# stream dial timeouts, gray failures, identity flips, a coordinator's Halt
# during a settle) and judges their invariants; the unit tests' short sweep
# leaves them out until internal/dst's composedByDefault is true.
SIM_SEEDS  ?= 1000
SIM_COMPOSED ?= 1
# SIM_LIVE=1 (the default here) adds, to composed seeds, the liveness moves
# (-sim.live: order bursts, lookup 5xx, dead-man arm failures on failback,
# process stalls, a halt with unknown orders); make sim prints the
# availability figure of gate-open-while-usable over the sweep.
SIM_LIVE   ?= 1
SIM_START  ?= 1
SIM_ARGS   ?=
SIM_SHARDS ?= $(shell nproc 2>/dev/null || echo 2)
SIM_BUILD  ?=
# SIM_TAGS: the sweeps are built with the seeded yield points (internal/dst's
# documentation, "Yield points"); SIM_TAGS= builds them without.
SIM_TAGS   ?= -tags dstyield
# SIM_FIX=1 (the default): the sweeps are built with FIX seeds (internal/dst's
# documentation, "FIX"): the tag dstfix added to SIM_TAGS, and the patched
# quickfix written by internal/dst/qfhook given with -modfile. SIM_FIX=0
# builds without them (no seed is then a FIX seed).
SIM_FIX    ?= 1

# sim-flags sets $$tags to SIM_TAGS plus, with SIM_FIX=1, dstfix and the
# -modfile of a patched quickfix written under $$d/qf; $$rtags is the same
# for a replay command (a copy written to /tmp/qf).
define sim-flags
tags="$(SIM_TAGS)"; rtags="$$tags"; \
if [ "$(SIM_FIX)" = 1 ]; then \
  mf=$$($(GO) run ./internal/dst/qfhook -out=$$d/qf) || { rm -rf $$d; exit 2; }; \
  if [ -n "$$tags" ]; then tags="$$tags,dstfix"; else tags="-tags dstfix"; fi; \
  rtags="$$tags -modfile=\"\$$($(GO) run ./internal/dst/qfhook -out=/tmp/qf)\""; tags="$$tags -modfile=$$mf"; \
fi
endef

# sim-sweep runs the test binary $$bin over the seeds in SIM_SHARDS processes,
# writing $$d/log (every shard's output); $$status is 1 if any shard failed.
define sim-sweep
status=0; began=$$(date +%s%N); \
for i in $$(seq 0 $$(($(SIM_SHARDS)-1))); do \
  (cd internal/dst && $$bin -test.count=1 -test.timeout=30m -test.run='TestSimSeeds$$' -test.v \
    -sim.seeds=$(SIM_SEEDS) -sim.start=$(SIM_START) -sim.shard=$$i/$(SIM_SHARDS) -sim.composed=$(if $(filter 1,$(SIM_COMPOSED)),true,false) -sim.live=$(if $(filter 1,$(SIM_LIVE)),true,false) $(SIM_ARGS) >$$d/log.$$i 2>&1; \
    echo $$? >$$d/rc.$$i) & \
done; wait; \
for i in $$(seq 0 $$(($(SIM_SHARDS)-1))); do cat $$d/log.$$i; [ "$$(cat $$d/rc.$$i)" = 0 ] || status=1; done >$$d/log; \
ms=$$(( ($$(date +%s%N) - began) / 1000000 )); \
echo "sim: $(SIM_SEEDS) seeds from $(SIM_START) in $$((ms / 1000)).$$((ms % 1000 / 100)) s wall, $(SIM_SHARDS) processes"
endef

.PHONY: sim
sim:
	@d=$$(mktemp -d); bin=$$d/dst.test; $(sim-flags); \
	$(GO) test -c $$tags $(SIM_BUILD) -o $$bin ./internal/dst || { rm -rf $$d; exit 2; }; \
	$(sim-sweep); \
	awk '/broke [0-9]+ invariant|two runs gave|^panic/ { p = 1 } p { print } /replay:/ { p = 0 }' $$d/log; \
	awk '/dst: [0-9]+ seeds in/ { n += $$3; f += $$(NF-1) } \
	  $$1 ~ /^dedup=/ && NF == 9 { k = $$1 " " $$2 " " $$3; if (!(k in s)) keys[++nk] = k; \
	    s[k] += $$4; x[k] += $$5; o[k] += $$6; u[k] += $$7; l[k] += $$8; r[k] += $$9 } \
	  END { printf "dst: %d seeds, %d failed\n%-50s %6s %6s %8s %6s %6s %7s\n", n, f, "broker policy", "seeds", "failed", "orders", "dups", "late", "resends"; \
	    for (i = 1; i <= nk; i++) { k = keys[i]; printf "%-50s %6d %6d %8d %6d %6d %7d\n", k, s[k], x[k], o[k], u[k], l[k], r[k] } }' $$d/log | \
	  { IFS= read -r head; echo "$$head"; IFS= read -r cols; echo "$$cols"; sort; }; \
	awk '/dst: availability judged/ { for (i = 1; i <= NF; i++) { if ($$i == "judged") j += $$(i+1); if ($$i == "usable") c += $$(i+1); \
	    if ($$i == "bound") b += $$(i+1); if ($$i == "seeds" && $$(i-1) == "unbounded") u += $$(i+1); if ($$i == "worst" && $$(i+1) + 0 > w) { w = $$(i+1); ws = $$(i+4); gsub(/[^0-9]/, "", ws) } } \
	    if (match($$0, /unbounded \[[0-9 ]*\]/)) l = l " " substr($$0, RSTART + 11, RLENGTH - 12) } \
	  END { if (j > 0) printf "dst: availability (gate-open-while-usable): judged %.1f s; gate not open on a usable path while one was usable %.1f s (%.3f%%), beyond the bound %.1f s (%.3f%%); %d seeds with an unbounded closure:%s; worst %.1f s (seed %s)\n", \
	    j / 1000, c / 1000, 100 * c / j, b / 1000, 100 * b / j, u, l, w / 1000, ws }' $$d/log; \
	rm -rf $$d; exit $$status
# sim-defect: the same sweep against a build of pathdialer whose gate has its
# old, split in-flight→unknown hand-over again (internal/dst/splitgate writes a
# go build overlay; no file of the module changes). SIM_GAP is what runs
# between the two steps: none (the defect exactly as it was), gosched (the
# goroutine yields there, as a preempted one would) or a virtual duration.
# Succeeds when the sweep FINDS the defect (unknown-settled-before-release).
SIM_GAP ?= gosched

.PHONY: sim-defect
sim-defect: SIM_COMPOSED = 0
sim-defect:
	@d=$$(mktemp -d); bin=$$d/dst.test; $(sim-flags); \
	ov=$$($(GO) run ./internal/dst/splitgate -gap=$(SIM_GAP) -out=$$d) || { rm -rf $$d; exit 2; }; \
	$(GO) test -c $$tags $(SIM_BUILD) -overlay=$$ov -o $$bin ./internal/dst || { rm -rf $$d; exit 2; }; \
	$(sim-sweep); \
	grep -E 'dst: [0-9]+ seeds' $$d/log; \
	first=$$(grep -E -o 'seed [0-9]+ \(' $$d/log | grep -E -o '[0-9]+' | sort -n | head -1); \
	if grep -q 'INVARIANT unknown-settled-before-release' $$d/log; then \
	  echo "split hand-over (gap $(SIM_GAP)) found; lowest failing seed: $$first"; \
	  grep -E -m1 -A1 "seed $$first \(" $$d/log; \
	  echo "replay: $(GO) run ./internal/dst/splitgate -gap=$(SIM_GAP) -out=/tmp/split && $(GO) test $$rtags -overlay=/tmp/split/overlay.json ./internal/dst -run 'TestSimSeeds\$$' -count=1 -v -args -sim.seed=$$first -sim.trace=sim-$$first.trace"; \
	  rm -rf $$d; \
	else echo "split hand-over (gap $(SIM_GAP)) NOT found in $(SIM_SEEDS) seeds"; rm -rf $$d; exit 1; fi
# sim-plant: the sweep against a build with DEFECT re-planted (a named
# defect of internal/dst/plant: go run ./internal/dst/plant -list; several,
# comma-separated, at once) through a go build overlay; no file of the module
# changes. Succeeds when the sweep FINDS it: a seed breaks the first defect's
# invariant (the composed moves are on when that defect needs them). It
# prints, for every invariant broken, the seeds that broke it, then the
# lowest seed that broke the defect's invariant and its replay command.
# SIM_GAP as for sim-defect (what a defect's {{gap}} becomes; most defects
# have none). The table of defects, invariants and the seeds found is in
# internal/dst's documentation ("Planted defects"). Example:
#   make sim-plant DEFECT=settle-inline SIM_SEEDS=1000
DEFECT ?= split-gate
comma := ,

.PHONY: sim-plant
sim-plant: SIM_COMPOSED = $(shell $(GO) run ./internal/dst/plant -composed=$(firstword $(subst $(comma), ,$(DEFECT))) 2>/dev/null | sed 's/true/1/;s/false/0/')
sim-plant:
	@d=$$(mktemp -d); bin=$$d/dst.test; $(sim-flags); \
	inv=$$($(GO) run ./internal/dst/plant -invariant=$(firstword $(subst $(comma), ,$(DEFECT)))) || { rm -rf $$d; exit 2; }; \
	ov=$$($(GO) run ./internal/dst/plant -defect=$(DEFECT) -gap=$(SIM_GAP) -out=$$d/plant) || { rm -rf $$d; exit 2; }; \
	$(GO) test -c $$tags $(SIM_BUILD) -overlay=$$ov -o $$bin ./internal/dst || { rm -rf $$d; exit 2; }; \
	$(sim-sweep); \
	grep -E 'dst: [0-9]+ seeds' $$d/log; \
	awk '/seed [0-9]+ \(/ { match($$0, /seed [0-9]+ \(/); s = substr($$0, RSTART + 5, RLENGTH - 7) } \
	  match($$0, /INVARIANT [a-z-]+:/) { k = substr($$0, RSTART + 10, RLENGTH - 11); if (!((k, s) in seen)) { seen[k, s] = 1; n[k]++; l[k] = l[k] " " s } } \
	  END { for (k in n) printf "  %-40s %4d seeds:%s\n", k, n[k], l[k] }' $$d/log | sort; \
	seeds=$$(awk -v inv="INVARIANT $$inv:" '/seed [0-9]+ \(/ { match($$0, /seed [0-9]+ \(/); s = substr($$0, RSTART + 5, RLENGTH - 7) } index($$0, inv) { print s }' $$d/log | sort -nu); \
	first=$$(echo "$$seeds" | head -1); \
	if grep -q "INVARIANT $$inv" $$d/log; then \
	  echo "$(DEFECT) (gap $(SIM_GAP)) found ($$inv); lowest failing seed: $$first; $$(echo "$$seeds" | wc -l) seeds break it:" $$seeds; \
	  grep -E -m1 -A1 "seed $$first \(" $$d/log; \
	  echo "replay: $(GO) run ./internal/dst/plant -defect=$(DEFECT) -gap=$(SIM_GAP) -out=/tmp/plant && $(GO) test $$rtags -overlay=/tmp/plant/overlay.json ./internal/dst -run 'TestSimSeeds\$$' -count=1 -v -args -sim.seed=$$first -sim.composed=$(if $(filter 1,$(SIM_COMPOSED)),true,false)"; \
	  rm -rf $$d; \
	else echo "$(DEFECT) (gap $(SIM_GAP)) NOT found ($$inv) in $(SIM_SEEDS) seeds"; rm -rf $$d; exit 1; fi
# --- end sim ---
# --- mutants ---
# mutants: how far the tests reach. Every defect of internal/dst/plant (go
# run ./internal/dst/plant -list), or those in MUTANTS, is planted through a
# go build overlay (no file of the repository changes) and run against three
# layers (scripts/mutants.sh does the work; one defect, one layer at a time):
#   unit   go test $(MUTANT_UNIT_FLAGS) of the packages the defect changes
#          (plant -packages; in their own module, as coord/etcd), with
#          -timeout $(MUTANT_UNIT_TIMEOUT): found when a test fails planted,
#          again in MUTANT_UNIT_CONFIRM runs of it alone, and passes all of as
#          many unplanted (a test that does not is listed as flaky and
#          skipped in a new run, at most MUTANT_UNIT_ROUNDS), or
#          "timeout" when the run hangs;
#   sweep  MUTANT_SEEDS seeds from SIM_START of the simulation (the build of
#          make sim: yield points, FIX seeds; composed when the defect needs
#          it; SIM_LIVE): the lowest seed that broke its invariant and how
#          many did ("n/a": the simulation does not build its module).
#          MUTANT_SWEEP=first runs chunks of MUTANT_CHUNK seeds and stops after
#          the first chunk that breaks it (lowest seed exact, count "n+");
#   chaos  one cell of integration/chaos (its policy from MUTANT_CELLS, else
#          MUTANT_CELL_DEFAULT; MUTANT_ORDERS orders, MUTANT_FAULTS faults,
#          chaos seed MUTANT_CHAOS_SEED, built with SIM_TAGS): its violations.
# Prints one table (per defect: each layer's finding and its time in
# seconds, the first failing unit test) and a summary (found per layer, by
# any layer, and the defects no layer found), and writes it to
# MUTANT_REPORT. MUTANT_LAYERS runs some layers only. Fails when a defect is
# found by no layer run (exit 1) or cannot be planted or built (exit 2).
# Every defect, all layers, 1000 seeds is hours on a small machine; e.g.
#   make mutants MUTANTS='lease-margin drop-unknown fix-resend-order' MUTANT_SEEDS=300 MUTANT_SWEEP=first
#   make mutants MUTANT_LAYERS=unit
MUTANTS ?= all
MUTANT_LAYERS ?= unit sweep chaos
MUTANT_SEEDS  ?= $(SIM_SEEDS)
MUTANT_SWEEP  ?= all
MUTANT_CHUNK  ?= 100
MUTANT_UNIT_FLAGS   ?= -race -failfast
MUTANT_UNIT_TIMEOUT ?= 10m
MUTANT_UNIT_ROUNDS  ?= 5
MUTANT_UNIT_CONFIRM ?= 3
MUTANT_ORDERS ?= 1500
MUTANT_FAULTS ?= 30
MUTANT_CHAOS_SEED ?= 7
MUTANT_GAP    ?= none
MUTANT_REPORT ?= reports/mutants.txt
# mutant=policy (the cell where it must show); others: MUTANT_CELL_DEFAULT
MUTANT_CELLS ?= acquire-while-held=dedup=none,fence=enforced,tokens=off \
  fence-not-waited=dedup=none,fence=enforced,tokens=off
MUTANT_CELL_DEFAULT ?= dedup=none,fence=none,tokens=off

.PHONY: mutants
mutants:
	@GO='$(GO)' MUTANTS='$(MUTANTS)' MUTANT_LAYERS='$(MUTANT_LAYERS)' MUTANT_SEEDS='$(MUTANT_SEEDS)' \
	  MUTANT_SWEEP='$(MUTANT_SWEEP)' MUTANT_CHUNK='$(MUTANT_CHUNK)' MUTANT_UNIT_FLAGS='$(MUTANT_UNIT_FLAGS)' \
	  MUTANT_UNIT_TIMEOUT='$(MUTANT_UNIT_TIMEOUT)' MUTANT_UNIT_ROUNDS='$(MUTANT_UNIT_ROUNDS)' MUTANT_UNIT_CONFIRM='$(MUTANT_UNIT_CONFIRM)' MUTANT_ORDERS='$(MUTANT_ORDERS)' MUTANT_FAULTS='$(MUTANT_FAULTS)' \
	  MUTANT_CHAOS_SEED='$(MUTANT_CHAOS_SEED)' MUTANT_GAP='$(MUTANT_GAP)' MUTANT_REPORT='$(MUTANT_REPORT)' \
	  MUTANT_CELLS='$(MUTANT_CELLS)' MUTANT_CELL_DEFAULT='$(MUTANT_CELL_DEFAULT)' \
	  SIM_START='$(SIM_START)' SIM_SHARDS='$(SIM_SHARDS)' SIM_TAGS='$(SIM_TAGS)' SIM_FIX='$(SIM_FIX)' SIM_LIVE='$(SIM_LIVE)' \
	  bash scripts/mutants.sh
# --- end mutants ---

# --- fuzz ---
# fuzz: every fuzz target in the repository (each module: the library,
# coord/etcd, bench), each for FUZZTIME. Targets are found, not listed here:
# the packages whose tests declare `func Fuzz…`, then `go test -list '^Fuzz'`
# in each. FUZZMINIMIZETIME bounds the minimizing of each new input (Go's
# default, 60 s, would eat a short budget). FUZZ selects targets by a regular
# expression on their names (FUZZ=Relay). A failing input is written under
# the package's testdata/fuzz/<Target>/ and replays in plain `go test`.
# CI does not fuzz: plain `go test` (make test) already runs every target's
# seed corpus, and the inputs kept in testdata/fuzz, as ordinary tests.
# fuzz-list prints the targets found.
FUZZTIME         ?= 30s
FUZZMINIMIZETIME ?= 5s
FUZZ             ?= .

# fuzz-targets prints "<module dir> <package dir> <target>" per target.
define fuzz-targets
for f in $$(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go'); do \
  grep -q '^func Fuzz' "$$f" && dirname "$$f"; done | sort -u | while read -r dir; do \
  mod=$$dir; while [ ! -f "$$mod/go.mod" ]; do mod=$$(dirname "$$mod"); done; \
  rel=./$${dir#$$mod}; rel=$${rel#./}; rel=./$${rel#/}; \
  (cd "$$mod" && $(GO) test -list '^Fuzz' "$$rel") | grep '^Fuzz' | grep -E '$(FUZZ)' | \
    while read -r name; do echo "$$mod $$rel $$name"; done; done
endef

.PHONY: fuzz fuzz-list
fuzz-list:
	@$(fuzz-targets)

fuzz:
	@set -e; list=$$($(fuzz-targets)); \
	[ -n "$$list" ] || { echo "fuzz: no fuzz target matches FUZZ=$(FUZZ)"; exit 1; }; \
	n=$$(echo "$$list" | wc -l); echo "fuzz: $$n targets, $(FUZZTIME) each (minimize at most $(FUZZMINIMIZETIME))"; \
	echo "$$list" | { failed=""; \
	while read -r mod pkg name; do \
	  echo "fuzz: $$name in $$mod/$$pkg"; \
	  (cd "$$mod" && $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) \
	    -fuzzminimizetime $(FUZZMINIMIZETIME) "$$pkg") || failed="$$failed $$name($$mod/$$pkg)"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed"; exit 1; fi; \
	echo "fuzz: all $$n targets passed"; }
# --- end fuzz ---
