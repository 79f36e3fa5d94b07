#!/usr/bin/env bash
# bench/contain.sh — one worker's flood of actions against another's claims
# (Containment, issue 17): the quiet worker's filing -> claimed latency
# while a second worker's box files 60 kB tasks as fast as the host
# answers (each filing takes that worker's partition lock and rewrites its
# tasks.json), against the same with that box frozen. The two sides are
# paired: one box floods for the whole bench, frozen (cgroup freezer) for
# each quiet sample and thawed for each flooded one, each pair in a
# random order, with the same settling before every sample, so
# both see the same machine load, the same partitions and the same page
# cache; only the flood differs. The design's target: the flooded median
# within 2x of the quiet one.
# Run by `make bench` with the suite built in ./bin; needs root (boxes).
# N pairs (default 30), within BUDGET seconds (default 100) of sampling;
# PREFILL (below) for a heavier flood, FLOOD=bulk for one that does not
# wait for its answers, FLOOD=idle for the control.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
export PATH=$BIN:$PATH ROSTER_EXEC_PATH=$BIN
N=${N:-30}
BUDGET=${BUDGET:-100}
[ "$(id -u)" = 0 ] || { echo "contain bench: needs root (real boxes); skipped"; exit 0; }
# Without FLOOD, both floods in turn: FLOOD=file (a box calling roster-task
# file as fast as it is answered), then FLOOD=bulk into a 9 MB partition.
if [ -z "${FLOOD:-}" ]; then
	echo "== FLOOD=file: roster-task file in a loop"
	FLOOD=file bash "$self" || exit
	echo "== FLOOD=bulk PREFILL=${PREFILL:-150}: filings posted ten at a time, unanswered"
	FLOOD=bulk PREFILL=${PREFILL:-150} exec bash "$self"
fi

work=$(mktemp -d /tmp/roster-bench-contain.XXXXXX)
export ROSTER_HOME=$work/h
dpid=
cg=
thaw() {
	[ -n "$cg" ] || return 0
	case $cg in
	*/freezer/*) echo THAWED >"$cg/freezer.state" 2>/dev/null || true ;;
	*) echo 0 >"$cg/cgroup.freeze" 2>/dev/null || true ;;
	esac
}
cleanup() {
	thaw
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null || true
	for r in $(roster-box ps --json 2>/dev/null | sed -n 's/.*"run":"\([^"]*\)".*/\1/p'); do roster-box kill "$r" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}
trap cleanup EXIT

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

roster-task init >/dev/null 2>&1
# One flood run for the whole bench: its ceiling outlasts it.
printf '[ceilings]\nfiled = "10m"\n[dispatch]\ncap = 3\n' >"$ROSTER_HOME/org.toml"
roster-task worker add quiet --heartbeat off --command /bin/true >/dev/null
# FLOOD=idle is the bench's control: the same box doing nothing, so the
# two sides differ only by the freezer; it must read about 1x.
# FLOOD=bulk posts its filings (12 kB, batches of 10) straight into the
# outbox without waiting for each answer, up to the run's 1,000 actions:
# the host's pacing of a run's actions (a tenth of the wall time after
# a 2 s burst) is what bounds it; with PREFILL each one rewrites MBs.
flood='while roster-task file "$t" >/dev/null; do :; done'
[ "${FLOOD:-}" = idle ] && flood='sleep 100000'
[ "${FLOOD:-}" = bulk ] && flood='t=$(head -c 12000 /dev/zero | tr "\0" y); o=$ROSTER_OUTBOX; i=0
while [ $i -lt 1000 ]; do
	for _ in $(seq 10); do i=$((i + 1)); printf "{\"format\":1,\"kind\":\"file\",\"text\":\"%s\"}" "$t" >"$o/tmp/a"; mv "$o/tmp/a" "$o/new/$i.json"; done
	while [ ! -e "$o/done/$i.json" ]; do sleep 0.1; done
done; sleep 100000'
roster-task worker add flood --heartbeat off --command /bin/sh --command=-c \
	--command 't=$(head -c 60000 /dev/zero | tr "\0" y); '"$flood" >/dev/null
roster-dispatch --poll 2s 2>"$work/dispatch.log" &
dpid=$!
qj=$ROSTER_HOME/data/workers/quiet/tasks/journal.jsonl
fj=$ROSTER_HOME/data/workers/flood/tasks/journal.jsonl
ft=$ROSTER_HOME/data/workers/flood/tasks/tasks.json
sleep 1

# flood_cgroup finds the flood box's cgroup that can be frozen: cgroup v1's
# freezer, else v2's (cgroup.freeze).
flood_cgroup() {
	local c
	c=$(roster-box ps --json 2>/dev/null | grep '"worker":"flood"' | sed -n 's/.*"container":"\([^"]*\)".*/\1/p' | head -1)
	[ -n "$c" ] || return 1
	local d
	d=$(find /sys/fs/cgroup/freezer -type d -name "$c" 2>/dev/null | head -1)
	if [ -z "$d" ]; then
		d=$(find /sys/fs/cgroup -maxdepth 8 -type d -name "$c" 2>/dev/null | while read -r x; do [ -e "$x/cgroup.freeze" ] && echo "$x"; done | head -1)
	fi
	[ -n "$d" ] && echo "$d"
}

# freeze waits until the box is frozen, its last filing answered (flood's
# journal still for 200 ms) and the dispatcher done with it (no CPU time
# used for 100 ms): a quiet sample must not pay for the flood's backlog.
freeze() {
	case $cg in
	*/freezer/*)
		echo FROZEN >"$cg/freezer.state"
		while [ "$(cat "$cg/freezer.state")" != FROZEN ]; do sleep 0.01; done
		;;
	*)
		echo 1 >"$cg/cgroup.freeze"
		while ! grep -q '^frozen 1' "$cg/cgroup.events"; do sleep 0.01; done
		;;
	esac
	local a b
	a=$(stat -c %s "$fj")
	while sleep 0.2; b=$(stat -c %s "$fj"); [ "$a" != "$b" ]; do a=$b; done
	a=$(cputime "$dpid")
	while sleep 0.1; b=$(cputime "$dpid"); [ "$a" != "$b" ]; do a=$b; done
}

# cputime is a process's user and system time, in clock ticks.
cputime() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# sample: one filing of quiet's -> its claim, in ms, twice: from before
# `roster-task add` starts to the journal's claimed time (what a person
# sees), and from the journal's filed time to its claimed time (the
# filing's write and the dispatcher's part, without the start of a
# process on a loaded machine); then waits for its box to be gone, so no
# sample pays for the last.
at() { grep "\"event\":\"$1\",\"task\":\"$2\"" "$qj" | sed 's/.*"at":"\([^"]*\)".*/\1/'; }
sample() {
	local t0 id c
	t0=$(date +%s%N)
	id=$(roster-task add quiet "sample")
	while ! grep -q "\"event\":\"claimed\",\"task\":\"$id\"" "$qj" 2>/dev/null; do sleep 0.005; done
	c=$(date -d "$(at claimed "$id")" +%s%N)
	echo $(((c - t0) / 1000000)) $(((c - $(date -d "$(at filed "$id")" +%s%N)) / 100000))
	while [ -n "$(roster-task ls quiet --json 2>/dev/null)" ] || roster-box ps --json 2>/dev/null | grep -q '"worker":"quiet"'; do sleep 0.02; done
}

# settle: the same before every sample of either kind, so that what came
# before it (the last run's tail, a thaw) is in neither: the dispatcher
# still (no CPU time used for 100 ms, at most 2 s), then 0.3 s.
settle() {
	local a b k=0
	a=$(cputime "$dpid")
	while sleep 0.1; b=$(cputime "$dpid"); [ "$a" != "$b" ] && [ $k -lt 20 ]; do a=$b; k=$((k + 1)); done
	sleep 0.3
}

# PREFILL=K files K pending tasks of 60 kB into the flood's partition
# first (a heavier flood: each of its filings rewrites K x 60 kB).
t60=$(head -c 60000 /dev/zero | tr '\0' p)
for _ in $(seq "${PREFILL:-0}"); do roster-task add flood --at "2099-01-01 00:00" "$t60" >/dev/null; done
roster-task add flood "flood" >/dev/null
for _ in $(seq 100); do
	cg=$(flood_cgroup) && { [ -s "$ft" ] || [ "${FLOOD:-}" = idle ]; } && break
	sleep 0.1
done
[ -n "$cg" ] || { echo "contain bench: the flood box did not start" >&2; exit 1; }
sleep 2 # let the flood get going
echo "load at start: $(cat /proc/loadavg); flood's tasks.json $(($(stat -c %s "$ft") >> 10)) KiB"

RANDOM=17
quiet=() flooded=() ratios=() jquiet=() jflooded=() jratios=() lines=0
end=$(($(date +%s) + BUDGET))
for i in $(seq "$N"); do
	[ "$(date +%s)" -lt "$end" ] || break
	# Each pair in an order drawn at random (seeded: the same in every
	# run of the bench): what a sample's place in the run does to it
	# falls on both kinds alike, not on one.
	first=$((RANDOM % 2))
	for half in 0 1; do
		if [ $half = "$first" ]; then
			freeze
			settle
			read -r q jq < <(sample)
			thaw
		else
			settle
			l0=$(wc -l <"$fj")
			read -r f jf < <(sample)
			lines=$((lines + $(wc -l <"$fj") - l0))
		fi
	done
	quiet+=("$q") flooded+=("$f") jquiet+=("$jq") jflooded+=("$jf")
	ratios+=("$(awk -v a="$q" -v b="$f" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')")
	jratios+=("$(awk -v a="$jq" -v b="$jf" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')")
done
n=${#quiet[@]}
med() { printf '%s\n' "$@" | median; }
echo "load at end:   $(cat /proc/loadavg); flood's tasks.json $(($(stat -c %s "$ft") >> 10)) KiB"
echo "quiet:   ${quiet[*]}"
echo "flooded: ${flooded[*]}"
echo "flood's journal grew by $lines lines during the flooded samples (2 a filing); longest line $(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$fj") bytes"
report() { # what, quiet median, flooded median, median pair, unit divisor
	awk -v w="$1" -v a="$2" -v b="$3" -v r="$4" -v d="$5" -v n="$n" 'BEGIN {
		printf "%s, medians of %d pairs: quiet (flood frozen) %.1f ms, flooded %.1f ms\n", w, n, a / d, b / d
		if (a > 0) printf "  ratio flooded/quiet: %.2fx of the medians, %.2fx the median pair (target: <= 2x)\n", b / a, r }'
}
report "add started -> claimed" "$(med "${quiet[@]}")" "$(med "${flooded[@]}")" "$(med "${ratios[@]}")" 1
report "filed -> claimed (journal)" "$(med "${jquiet[@]}")" "$(med "${jflooded[@]}")" "$(med "${jratios[@]}")" 10
