#!/usr/bin/env bash
# bench/contain.sh — one worker's flood of actions against another's claims
# (Containment, issue 17): the quiet worker's filing -> claimed latency with
# the dispatcher otherwise idle, side by side with the same while a second
# worker's box files 60 kB tasks as fast as the host answers (each filing
# takes that worker's partition lock; its filed tasks keep the flood going).
# The design's target: the flooded case within 2x of the quiet one.
# Run by `make bench` with the suite built in ./bin; needs root (boxes).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
export PATH=$BIN:$PATH ROSTER_EXEC_PATH=$BIN
N=${N:-15}
[ "$(id -u)" = 0 ] || { echo "contain bench: needs root (real boxes); skipped"; exit 0; }

work=$(mktemp -d /tmp/roster-bench-contain.XXXXXX)
export ROSTER_HOME=$work/h
dpid=
cleanup() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null || true
	for r in $(roster-box ps --json 2>/dev/null | sed -n 's/.*"run":"\([^"]*\)".*/\1/p'); do roster-box kill "$r" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}
trap cleanup EXIT

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

roster-task init >/dev/null 2>&1
printf '[ceilings]\nfiled = "20s"\n[dispatch]\ncap = 3\n' >"$ROSTER_HOME/org.toml"
roster-task worker add quiet --heartbeat off --command /bin/true >/dev/null
roster-task worker add flood --heartbeat off --command /bin/sh --command=-c \
	--command 't=$(head -c 60000 /dev/zero | tr "\0" y); while roster-task file "$t" >/dev/null; do :; done' >/dev/null
roster-dispatch --poll 2s 2>"$work/dispatch.log" &
dpid=$!
sleep 1

# claims: N samples of quiet's add -> claimed (the journal's claimed time)
claims() {
	local j=$ROSTER_HOME/data/workers/quiet/tasks/journal.jsonl
	for i in $(seq "$N"); do
		local t0; t0=$(date +%s%N)
		local id; id=$(roster-task add quiet "sample $i")
		while ! grep -q "\"event\":\"claimed\",\"task\":\"$id\"" "$j" 2>/dev/null; do sleep 0.005; done
		local at; at=$(grep "\"event\":\"claimed\",\"task\":\"$id\"" "$j" | sed 's/.*"at":"\([^"]*\)".*/\1/')
		echo $(( ($(date -d "$at" +%s%N) - t0) / 1000000 ))
		while [ -n "$(roster-task ls quiet --json 2>/dev/null)" ]; do sleep 0.02; done
	done
}

echo "== quiet worker: filing -> claimed (N=$N)"
quiet=$(claims | median)
roster-task add flood "flood" >/dev/null
sleep 3
fj=$ROSTER_HOME/data/workers/flood/tasks/journal.jsonl
before=$(wc -l <"$fj")
echo "== the same while worker flood files 60 kB tasks from its box"
flooded=$(claims | median)
lines=$(( $(wc -l <"$fj") - before ))
printf '%-40s %8s ms\n' "quiet (dispatcher otherwise idle)" "$quiet" "while flood floods its partition" "$flooded"
echo "flood's journal grew by $lines lines during the flooded samples; longest line $(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$fj") bytes"
awk -v a="$quiet" -v b="$flooded" 'BEGIN { if (a > 0) printf "ratio flooded/quiet: %.1fx (target: <= 2x)\n", b/a }'
