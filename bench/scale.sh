#!/usr/bin/env bash
# bench/scale.sh — the dispatcher with many idle workers (issue 31).
#
# For 100, 1,000 and 10,000 workers (plain /bin/true commands, heartbeat
# off, nothing filed; their specs written straight into workers/, as
# `roster worker add` would leave them, for speed), plus one worker whose
# command writes a timestamp into its store:
#   - start-up: the dispatcher's own "ready" line (reclaim, watches, first
#     look at every worker);
#   - its CPU over IDLE seconds with nothing due, and its peak RSS;
#   - filed -> box command started, median of N, each filing at a random
#     phase of the 2 s poll;
#   - roster-task add and roster-task due on an idle worker, and
#     roster worker ls, at that size.
# Goals at 10,000 (the issue): idle < 1% of a core, RSS < 200 MB, filed ->
# started <= 100 ms median and within 1.5x of the figure at the smallest
# size, start-up <= 10 s. Figures are for reading, never pass/fail.
# Run by `make bench` with the suite built in ./bin; needs root (boxes).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
export PATH=$BIN:$PATH ROSTER_EXEC_PATH=$BIN
N=${N:-10}
IDLE=${IDLE:-60}
SIZES=${SIZES:-100 1000 10000}
[ "$(id -u)" = 0 ] || { echo "scale bench: needs root (real boxes); skipped"; exit 0; }

work=$(mktemp -d /tmp/roster-bench-scale.XXXXXX)
dpid=
cleanup() { [ -n "$dpid" ] && kill "$dpid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ms() { python3 -c 'import sys,time; t=time.perf_counter(); import subprocess; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(round((time.perf_counter()-t)*1000, 1))' "$@"; }

hz=$(getconf CLK_TCK)
printf '%-8s %10s %12s %9s %14s %9s %9s %10s\n' workers "start-up s" "idle % core" "RSS MB" "filed->start" "add ms" "due ms" "ls ms"
first_lat=
for size in $SIZES; do
	h=$work/h$size
	mkdir -p "$h"
	export ROSTER_HOME=$h
	roster-task init >/dev/null 2>&1
	roster-task worker add probe --heartbeat off --command /bin/sh --command=-c \
		--command 'date +%s%N > ~/store/started; roster-task complete' >/dev/null
	python3 - "$h/workers" "$size" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    p = os.path.join(d, "w%05d.toml" % i)
    with open(p + ".tmp", "w") as f:
        f.write('command = ["/bin/true"]\nuid = %d\nheartbeat = "off"\n' % (400000 + i))
    os.rename(p + ".tmp", p)
PY
	sleep 1.2 # past the identity cache's racy window
	sync
	roster-dispatch --poll 2s 2>"$h/dispatch.log" &
	dpid=$!
	while ! grep -q 'msg="ready' "$h/dispatch.log"; do sleep 0.05; done
	startup=$(grep 'msg="ready' "$h/dispatch.log" | sed 's/.*seconds=\([0-9.]*\).*/\1/')
	sleep 3
	t0=$(cpu_ticks "$dpid")
	sleep "$IDLE"
	t1=$(cpu_ticks "$dpid")
	idle=$(awk -v a="$t0" -v b="$t1" -v s="$IDLE" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz / s * 100 }')
	store=$h/data/workers/probe/store
	: >"$work/lat"
	for i in $(seq "$N"); do
		rm -f "$store/started"
		sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.3 + (r % 2000) / 1000 }')"
		roster-task add probe "sample $i" >/dev/null
		t0=$(date +%s%N)
		while [ ! -s "$store/started" ]; do sleep 0.005; done
		echo $(( ($(cat "$store/started") - t0) / 1000000 )) >>"$work/lat"
		while [ -n "$(roster-task ls probe --json 2>/dev/null)" ]; do sleep 0.02; done
	done
	lat=$(median <"$work/lat")
	rss=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$dpid/status")
	kill "$dpid"; wait "$dpid" 2>/dev/null || true
	dpid=
	add=$(for i in 1 2 3 4 5; do ms roster-task add w00001 "x $i"; done | median)
	due=$(for i in 1 2 3 4 5; do ms roster-task due w00001; done | median)
	ls=$(for i in 1 2 3; do ms roster worker ls; done | median)
	[ -z "$first_lat" ] && first_lat=$lat
	printf '%-8s %10s %12s %9s %11s ms %9s %9s %10s\n' "$size" "$startup" "$idle" "$rss" "$lat" "$add" "$due" "$ls"
	last=$size last_lat=$lat
	rm -rf "$h"
done
awk -v a="$first_lat" -v b="$last_lat" -v n="$last" 'BEGIN { if (a > 0) printf "filed -> started at %s workers / at the smallest size: %.2fx (goal <= 1.5x, and <= 100 ms)\n", n, b/a }'
