#!/usr/bin/env bash
# mutants.sh: how far the tests reach. For every defect of internal/dst/plant
# (or those named in MUTANTS), planted through a go build overlay (no file of
# the repository changes), three layers are run and reported in one table:
#
#   unit   go test of every package the defect changes (its own module's
#          tests when it is in another module, as coord/etcd), built with the
#          overlay, under MUTANT_UNIT_TIMEOUT: found when a test fails planted,
#          fails again planted when run alone MUTANT_UNIT_CONFIRM times (at
#          least once) and passes unplanted as many times (any other
#          failing test is listed as flaky, not counted, and skipped in a new
#          run of the package, at most MUTANT_UNIT_ROUNDS runs), or when the
#          run times out (reported as "timeout": a hang found it).
#   sweep  the simulation over MUTANT_SEEDS seeds from SIM_START (composed
#          when the defect needs it, SIM_LIVE as make sim): the lowest seed
#          that broke the defect's invariant and how many did. With
#          MUTANT_SWEEP=first the seeds run in chunks of MUTANT_CHUNK and the
#          sweep stops after the first chunk that breaks it (the lowest seed is
#          exact, the count a lower bound, shown with "+"). "n/a": the
#          simulation does not build the defect's module.
#   chaos  one cell of integration/chaos (its broker policy from MUTANT_CELLS,
#          else MUTANT_CELL_DEFAULT): the violations counted.
#
# MUTANT_LAYERS picks layers ("unit sweep chaos"). The table goes to stdout
# and to MUTANT_REPORT; every log stays in the printed directory. Exit
# status: 0 when every defect is found by at least one layer run, 1 when one
# is found by none, 2 when a defect, a build or a tool failed.
# Run it through make mutants (which sets every variable).
set -u
cd "$(git rev-parse --show-toplevel)"

GO=${GO:-go}
MUTANTS=${MUTANTS:-all}
MUTANT_LAYERS=${MUTANT_LAYERS:-unit sweep chaos}
MUTANT_SEEDS=${MUTANT_SEEDS:-1000}
MUTANT_SWEEP=${MUTANT_SWEEP:-all}
MUTANT_CHUNK=${MUTANT_CHUNK:-100}
MUTANT_UNIT_FLAGS=${MUTANT_UNIT_FLAGS:--race -failfast}
MUTANT_UNIT_TIMEOUT=${MUTANT_UNIT_TIMEOUT:-10m}
MUTANT_UNIT_ROUNDS=${MUTANT_UNIT_ROUNDS:-5}
MUTANT_UNIT_CONFIRM=${MUTANT_UNIT_CONFIRM:-3}
MUTANT_ORDERS=${MUTANT_ORDERS:-1500}
MUTANT_FAULTS=${MUTANT_FAULTS:-30}
MUTANT_CHAOS_SEED=${MUTANT_CHAOS_SEED:-7}
MUTANT_GAP=${MUTANT_GAP:-none}
MUTANT_CELLS=${MUTANT_CELLS:-}
MUTANT_CELL_DEFAULT=${MUTANT_CELL_DEFAULT:-dedup=none,fence=none,tokens=off}
MUTANT_REPORT=${MUTANT_REPORT:-reports/mutants.txt}
SIM_START=${SIM_START:-1}
SIM_SHARDS=${SIM_SHARDS:-2}
SIM_TAGS=${SIM_TAGS--tags dstyield}
SIM_FIX=${SIM_FIX:-1}
SIM_LIVE=${SIM_LIVE:-1}

die() { echo "mutants: $*" >&2; exit 2; }
case "$MUTANT_SWEEP" in all | first) ;; *) die "MUTANT_SWEEP=$MUTANT_SWEEP: want all or first" ;; esac
for v in MUTANT_UNIT_ROUNDS MUTANT_UNIT_CONFIRM MUTANT_SEEDS MUTANT_CHUNK SIM_START SIM_SHARDS MUTANT_ORDERS MUTANT_FAULTS; do
	case "${!v}" in '' | *[!0-9]*) die "$v=${!v}: want a whole number" ;; esac
done
[ "$MUTANT_CHUNK" -gt 0 ] && [ "$SIM_SHARDS" -gt 0 ] && [ "$MUTANT_UNIT_ROUNDS" -gt 0 ] && [ "$MUTANT_UNIT_CONFIRM" -gt 0 ] || die "MUTANT_CHUNK, SIM_SHARDS, MUTANT_UNIT_ROUNDS and MUTANT_UNIT_CONFIRM must be at least 1"
for l in $MUTANT_LAYERS; do
	case "$l" in unit | sweep | chaos) ;; *) die "MUTANT_LAYERS: unknown layer $l (want unit, sweep, chaos)" ;; esac
done
has() { case " $MUTANT_LAYERS " in *" $1 "*) return 0 ;; esac; return 1; }
# unit_secs: MUTANT_UNIT_TIMEOUT (whole seconds, minutes or hours) in seconds.
case "$MUTANT_UNIT_TIMEOUT" in
[0-9]*h) unit_secs=${MUTANT_UNIT_TIMEOUT%h} mult=3600 ;;
[0-9]*m) unit_secs=${MUTANT_UNIT_TIMEOUT%m} mult=60 ;;
[0-9]*s) unit_secs=${MUTANT_UNIT_TIMEOUT%s} mult=1 ;;
*) unit_secs=x ;;
esac
case "$unit_secs" in '' | *[!0-9]*) die "MUTANT_UNIT_TIMEOUT=$MUTANT_UNIT_TIMEOUT: want whole seconds, minutes or hours (10m)" ;; esac
unit_secs=$((unit_secs * mult))

out=$(mktemp -d)
plant=$out/plant
$GO build -o "$plant" ./internal/dst/plant || die "cannot build internal/dst/plant"
if [ "$MUTANTS" = all ]; then
	MUTANTS=$("$plant" -names) || die "plant -names failed"
fi
for m in $MUTANTS; do "$plant" -composed="$m" >/dev/null || exit 2; done

# The simulation's build: the seeded yield points and, with SIM_FIX=1, the
# FIX seeds (tag dstfix and the patched quickfix given with -modfile).
tags=$SIM_TAGS
if has sweep && [ "$SIM_FIX" = 1 ]; then
	mf=$($GO run ./internal/dst/qfhook -out="$out/qf") || die "internal/dst/qfhook failed"
	if [ -n "$tags" ]; then tags="$tags,dstfix"; else tags="-tags dstfix"; fi
	tags="$tags -modfile=$mf"
fi
live=false
[ "$SIM_LIVE" = 1 ] && live=true

now() { date +%s; }

# gotest MOD PKG LOG ARGS...: go test of PKG in module MOD with the unit
# flags and time limit, output to LOG; returns go test's status (124 or 137:
# the limit of timeout(1) passed).
gotest() {
	local mod=$1 pkg=$2 log=$3
	shift 3
	# shellcheck disable=SC2086
	(cd "$mod" && timeout -k 30 $((unit_secs + 300)) $GO test -count=1 $MUTANT_UNIT_FLAGS -timeout "$MUTANT_UNIT_TIMEOUT" "$@" "$pkg") >"$log" 2>&1 </dev/null
}

# unit_pkg MOD PKG OVERLAY LOG: the unit layer for one package; sets u
# (missed, found, timeout, error), ut (what found it) and adds to flaky. A
# test counts when it fails planted, fails again planted when run alone
# MUTANT_UNIT_CONFIRM times (once is enough), and passes all of as many runs
# on the code as it is; one that does not is flaky: it is listed, not
# counted, and the package is run again without it (at most
# MUTANT_UNIT_ROUNDS runs, so -failfast does not let a flaky test hide the
# tests after it).
unit_pkg() {
	local mod=$1 pkg=$2 ov=$3 log=$4 where skip="" round failing tn confirmed rc
	where=$mod/${pkg#./}
	[ "$mod" = . ] && where=${pkg#./}
	[ "$pkg" = . ] && where=$mod
	for round in $(seq 1 "$MUTANT_UNIT_ROUNDS"); do
		if [ -n "$skip" ]; then
			gotest "$mod" "$pkg" "$log.$round" -overlay="$ov" -skip "^(${skip#|})\$"
		else
			gotest "$mod" "$pkg" "$log.$round" -overlay="$ov"
		fi
		rc=$?
		[ $rc = 0 ] && return
		if grep -q -E '\[(build|setup) failed\]' "$log.$round" && ! grep -q -E '^(--- FAIL|panic: )' "$log.$round"; then
			u=error ut="build failed: $log.$round"
			status=2
			return
		fi
		if [ $rc = 124 ] || [ $rc = 137 ] || grep -q '^panic: test timed out' "$log.$round"; then
			u=timeout
			ut=$(awk '/running tests:/ { getline; print $1; exit }' "$log.$round")
			ut="${ut:-(after $MUTANT_UNIT_TIMEOUT)} in $where"
			return
		fi
		failing=$(grep -E -o '^--- FAIL: [^ ]+' "$log.$round" | sed 's/--- FAIL: //' | sort -u)
		if [ -z "$failing" ]; then
			u=found ut="$(grep -E -m1 '^panic: ' "$log.$round" | cut -c1-60) in $where"
			return
		fi
		confirmed=""
		for tn in $failing; do
			if gotest "$mod" "$pkg" "$log.$tn.planted" -overlay="$ov" -count="$MUTANT_UNIT_CONFIRM" -run "^$tn\$"; then
				flaky="$flaky $tn(passed-planted-alone)"
			elif gotest "$mod" "$pkg" "$log.$tn.clean" -count="$MUTANT_UNIT_CONFIRM" -run "^$tn\$"; then
				confirmed="$confirmed $tn"
			else
				flaky="$flaky $tn(fails-unplanted)"
			fi
			skip="$skip|$tn"
		done
		if [ -n "$confirmed" ]; then
			# shellcheck disable=SC2086
			set -- $confirmed
			u=found ut="$1"
			[ $# -gt 1 ] && ut="$ut +$(($# - 1))"
			ut="$ut in $where"
			return
		fi
	done
}
status=0
found_any=0
missed=""
n_all=0 n_unit=0 n_sweep=0 n_sweepable=0 n_chaos=0 n_chaosable=0
fmt='%-27s| %-8s| %-38s %6s %6s %6s | %-34s %5s | %5s %5s %5s | %s\n'
table=$out/table
{
	printf "$fmt" defect unit "sweep: invariant" lowest seeds swept "chaos: cell" viol. "t(s):u" s c "first failing test (unit)"
} >"$table"
cat "$table"
began=$(now)

for m in $MUTANTS; do
	d=$out/$m
	mkdir -p "$d"
	n_all=$((n_all + 1))
	ov=$("$plant" -defect="$m" -gap="$MUTANT_GAP" -out="$d/plant") || { status=2; echo "mutants: $m: cannot plant" >&2; continue; }
	inv=$("$plant" -invariant="$m" 2>/dev/null) || inv=""
	comp=$("$plant" -composed="$m")
	inroot=0
	pkgs=$("$plant" -packages="$m") || { status=2; continue; }
	echo "$pkgs" | grep -q '^\. ' && inroot=1
	found=0

	# unit
	u=- ut=- tu=-
	if has unit; then
		t0=$(now)
		u=missed ut="" flaky=""
		while read -r mod pkg; do
			unit_pkg "$mod" "$pkg" "$ov" "$d/unit.$(echo "$mod/$pkg" | tr '/.' '__')"
			case $u in found | timeout | error) break ;; esac
		done <<<"$pkgs"
		[ -n "$flaky" ] && ut="${ut:+$ut; }not counted (flaky):$flaky"
		case $u in found | timeout) found=1 n_unit=$((n_unit + 1)) ;; esac
		tu=$(($(now) - t0))
	fi

	# sweep
	first=- n=- swept=- ts=-
	if has sweep; then
		if [ -z "$inv" ]; then
			first=n/a n=n/a swept=0 inv="- (${pkgs%% *} not simulated)"
		else
			t0=$(now)
			n_sweepable=$((n_sweepable + 1))
			bin=$d/dst.test
			# shellcheck disable=SC2086
			if ! $GO test -c $tags -overlay="$ov" -o "$bin" ./internal/dst >"$d/build.log" 2>&1; then
				first=error n=- status=2
			else
				: >"$d/log"
				start=$SIM_START
				end=$((SIM_START + MUTANT_SEEDS))
				chunk=$MUTANT_SEEDS
				[ "$MUTANT_SWEEP" = first ] && chunk=$MUTANT_CHUNK
				while [ "$start" -lt "$end" ]; do
					k=$((end - start))
					[ "$k" -gt "$chunk" ] && k=$chunk
					for i in $(seq 0 $((SIM_SHARDS - 1))); do
						(cd internal/dst && "$bin" -test.count=1 -test.timeout=60m -test.run='TestSimSeeds$' -test.v \
							-sim.seeds="$k" -sim.start="$start" -sim.shard="$i/$SIM_SHARDS" -sim.composed="$comp" -sim.live="$live" >"$d/log.$i" 2>&1) &
					done
					wait
					cat "$d"/log.[0-9]* >>"$d/log"
					start=$((start + k))
					if [ "$MUTANT_SWEEP" = first ] && grep -q "INVARIANT $inv:" "$d/log"; then break; fi
				done
				swept=$((start - SIM_START))
				seeds=$(awk -v inv="INVARIANT $inv:" '/seed [0-9]+ \(/ { match($0, /seed [0-9]+ \(/); s = substr($0, RSTART + 5, RLENGTH - 7) } index($0, inv) { print s }' "$d/log" | sort -nu)
				n=$(echo "$seeds" | grep -c . || true)
				first=$(echo "$seeds" | head -1)
				if [ -n "$first" ]; then
					found=1 n_sweep=$((n_sweep + 1))
					[ "$swept" -lt "$MUTANT_SEEDS" ] && n="$n+"
				else
					first=-
				fi
				grep -q '^panic' "$d/log" && first="$first(panic)"
			fi
			ts=$(($(now) - t0))
		fi
	fi

	# chaos
	cell=- v=- tc=-
	if has chaos; then
		if [ $inroot = 0 ]; then
			cell="n/a (${pkgs%% *} not in the chaos build)" v=n/a
		else
			t0=$(now)
			n_chaosable=$((n_chaosable + 1))
			cell=$MUTANT_CELL_DEFAULT
			for c in $MUTANT_CELLS; do [ "${c%%=*}" = "$m" ] && cell=${c#*=}; done
			# shellcheck disable=SC2086
			$GO run $SIM_TAGS -overlay="$ov" ./integration/chaos -seed "$MUTANT_CHAOS_SEED" -orders "$MUTANT_ORDERS" \
				-faults "$MUTANT_FAULTS" -policies "$cell" >"$d/chaos" 2>&1
			v=$(grep -E -o '(OK|FAILED|interrupted) \([0-9]+ violations\)' "$d/chaos" | tail -1 | grep -E -o '[0-9]+')
			if [ -z "$v" ]; then
				v='?' status=2
			elif [ "$v" -gt 0 ]; then
				found=1 n_chaos=$((n_chaos + 1))
			fi
			tc=$(($(now) - t0))
		fi
	fi

	if [ $found = 1 ]; then found_any=$((found_any + 1)); else missed="$missed $m"; fi
	# shellcheck disable=SC2059
	printf "$fmt" "$m" "$u" "$inv" "$first" "$n" "$swept" "$cell" "$v" "$tu" "$ts" "$tc" "${ut:--}" | tee -a "$table"
done

total=$(($(now) - began))
{
	echo
	echo "layers run: $MUTANT_LAYERS; $n_all defects"
	has unit && echo "unit:  found $n_unit of $n_all (go test $MUTANT_UNIT_FLAGS -timeout $MUTANT_UNIT_TIMEOUT of the packages each changes)"
	has sweep && echo "sweep: found $n_sweep of $n_sweepable the simulation builds ($MUTANT_SEEDS seeds from $SIM_START, MUTANT_SWEEP=$MUTANT_SWEEP, live=$live)"
	has chaos && echo "chaos: found $n_chaos of $n_chaosable in the chaos build (seed $MUTANT_CHAOS_SEED, $MUTANT_ORDERS orders, $MUTANT_FAULTS faults)"
	echo "any layer: found $found_any of $n_all${missed:+; found by none:$missed}"
	echo "wall time: $total s; logs in $out"
} >>"$table"
echo
mkdir -p "$(dirname "$MUTANT_REPORT")"
{
	echo "make mutants, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)"
	cat "$table"
} >"$MUTANT_REPORT"
cat "$MUTANT_REPORT"
echo "mutants: table written to $MUTANT_REPORT"
[ $status = 0 ] && [ -n "$missed" ] && status=1
exit $status
