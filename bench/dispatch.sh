#!/usr/bin/env bash
# bench/dispatch.sh — filing → box started, and the idle dispatcher's CPU.
#
# 1. From `roster-task add` returning to the box's command starting (a
#    timestamp the command writes into its store), with a running
#    dispatcher at --poll 2s: event-driven (inotify on the partition
#    folders) side by side with --no-watch (the poll alone).
# 2. The dispatcher's CPU over 60 idle seconds with 100 workers.
# Run by `make bench` with the suite built in ./bin; needs root (boxes).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
export PATH=$BIN:$PATH ROSTER_EXEC_PATH=$BIN
N=${N:-15}
IDLE=${IDLE:-60}
[ "$(id -u)" = 0 ] || { echo "dispatch bench: needs root (real boxes); skipped"; exit 0; }

work=$(mktemp -d /tmp/roster-bench-dispatch.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

now_ns() { date +%s%N; }

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# latency MODE-FLAGS...: prints one latency in ms per line
latency() {
	local h=$work/lat$RANDOM
	mkdir -p "$h"
	export ROSTER_HOME=$h
	roster-task init >/dev/null 2>&1
	roster-task worker add bench --heartbeat off --command /bin/sh --command=-c \
		--command 'date +%s%N > ~/store/started; roster-task complete' >/dev/null
	roster-dispatch --poll 2s "$@" 2>"$h/dispatch.log" &
	local dpid=$!
	pids+=("$dpid")
	sleep 1
	local store=$h/data/workers/bench/store
	for i in $(seq "$N"); do
		rm -f "$store/started"
		# Each filing at a random phase of the poll (0.3-2.3 s after the
		# last run ended): the dispatcher also looks when a box ends, so a
		# filing made right then would be claimed by that look, in either
		# mode, and the poll's own latency never measured.
		sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.3 + (r % 2000) / 1000 }')"
		roster-task add bench "sample $i" >/dev/null
		local t0; t0=$(now_ns)
		while [ ! -s "$store/started" ]; do sleep 0.005; done
		local t1; t1=$(cat "$store/started")
		local at; at=$(grep '"event":"claimed"' "$h/data/workers/bench/tasks/journal.jsonl" | tail -n1 | sed 's/.*"at":"\([^"]*\)".*/\1/')
		local tc; tc=$(date -d "$at" +%s%N)
		echo "$(( (t1 - t0) / 1000000 )) $(( (tc - t0) / 1000000 ))" >>"$work/claims"
		echo $(( (t1 - t0) / 1000000 ))
		# wait for the run to end before the next sample
		while [ -n "$(roster-task ls bench --json 2>/dev/null)" ]; do sleep 0.02; done
	done
	kill "$dpid"; wait "$dpid" 2>/dev/null || true
}

echo "== filing -> box command started (N=$N each, poll 2s)"
rm -f "$work/claims"
watch=$(latency | median)
watchclaim=$(awk '{print $2}' "$work/claims" | median)
rm -f "$work/claims"
nowatch=$(latency --no-watch | median)
nowatchclaim=$(awk '{print $2}' "$work/claims" | median)
printf '%-34s %8s ms   (of which add -> claimed: %s ms, <= 0 when the claim lands before `roster-task add` has exited; the rest is the box starting)\n' \
	"roster-dispatch (inotify)" "$watch" "$watchclaim" \
	"roster-dispatch --no-watch (poll)" "$nowatch" "$nowatchclaim"
awk -v a="$watch" -v b="$nowatch" 'BEGIN { if (a > 0) printf "ratio poll/inotify: %.1fx (target: inotify median <= 100 ms)\n", b/a }'

echo "== idle CPU, 100 workers, ${IDLE}s"
h=$work/idle
mkdir -p "$h"
export ROSTER_HOME=$h
roster-task init >/dev/null 2>&1
for i in $(seq 100); do
	roster-task worker add "w$i" --heartbeat 30m --command /bin/true >/dev/null
done
roster-dispatch 2>"$h/dispatch.log" &
dpid=$!
pids+=("$dpid")
sleep 5 # start-up: the first pass creates 100 heartbeat templates
tck=$(getconf CLK_TCK)
c0=$(awk '{print $14+$15}' /proc/$dpid/stat)
sleep "$IDLE"
c1=$(awk '{print $14+$15}' /proc/$dpid/stat)
awk -v d=$((c1 - c0)) -v t="$tck" -v s="$IDLE" \
	'BEGIN { printf "roster-dispatch idle: %.2f s CPU in %d s = %.2f%% of a core (target < 1%%)\n", d/t, s, 100*d/t/s }'
