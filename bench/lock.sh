#!/usr/bin/env bash
# bench/lock.sh — an uncontended lock around `true`, side by side in one
# run: `roster-lock L --worker W -- true` against util-linux
# `flock FILE true`, on the same filesystem (a scratch home in a temp
# folder). Two measurements:
#   1. interleaved: one run of each in turn, N times, each timed with
#      bash's $EPOCHREALTIME (no fork for the clock; the bash fork+exec
#      cost is in both and narrows the ratio a little);
#   2. hyperfine -N (no shell), when installed: one after the other.
# Prints both medians and the ratio roster-lock / flock (target <= 1.5).
# Report only: it never fails on the figures.
set -euo pipefail
BIN=${BIN:-$(pwd)/bin}
N=${N:-300}
for p in "$BIN/roster-lock" "$(command -v flock || true)"; do
	[ -n "$p" ] && [ -x "$p" ] || { echo "bench/lock.sh: missing ${p:-flock} (make build; make deps)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/roster-bench-lock.XXXXXX)
trap 'rm -rf "$work"' EXIT
home="$work/home"
if [ -x "$BIN/roster-task" ] && "$BIN/roster-task" --home "$home" init >/dev/null 2>&1 &&
	"$BIN/roster-task" --home "$home" worker add bench >/dev/null 2>&1; then
	:
else # the tree roster worker add leaves, by hand
	mkdir -p "$home/data/workers/bench/store/.locks" "$home/data/workers/bench/locks"
	chmod 1777 "$home/data/workers/bench/locks"
fi
true_bin=$(command -v true)
rl=("$BIN/roster-lock" --home "$home" L --worker bench -- "$true_bin")
fl=(flock "$work/L" "$true_bin")
"${rl[@]}" && "${fl[@]}" || { echo "bench/lock.sh: a command failed" >&2; exit 1; }

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2]+a[NR/2+1])/2}'; }
us() { # microseconds between two $EPOCHREALTIME values
	local a=${1/./} b=${2/./}
	echo $((10#$b - 10#$a))
}

echo "== uncontended lock + true: roster-lock vs flock(1), $N interleaved runs each"
for i in $(seq 20); do "${rl[@]}"; "${fl[@]}"; done # warm-up
: >"$work/rl.us"
: >"$work/fl.us"
for i in $(seq "$N"); do
	t0=$EPOCHREALTIME; "${rl[@]}"; t1=$EPOCHREALTIME
	"${fl[@]}"; t2=$EPOCHREALTIME
	us "$t0" "$t1" >>"$work/rl.us"
	us "$t1" "$t2" >>"$work/fl.us"
done
m_rl=$(median <"$work/rl.us")
m_fl=$(median <"$work/fl.us")
awk -v r="$m_rl" -v f="$m_fl" 'BEGIN {
	printf "  %-12s median %6.2f ms\n  %-12s median %6.2f ms\n", "roster-lock", r / 1000, "flock", f / 1000
	printf "  ratio roster-lock/flock: %.2f (target <= 1.5)\n", r / f
}'

if command -v hyperfine >/dev/null; then
	echo "== the same with hyperfine -N ($N runs each, 20 warm-up, one after the other)"
	hyperfine -N -w 20 -r "$N" --export-csv "$work/h.csv" \
		-n roster-lock "${rl[*]}" -n flock "${fl[*]}" >/dev/null 2>&1
	# command,mean,stddev,median,user,system,min,max
	awk -F, 'NR > 1 { m[NR - 1] = $4; printf "  %-12s median %6.2f ms\n", $1, $4 * 1000 }
		END { printf "  ratio roster-lock/flock: %.2f (target <= 1.5)\n", m[1] / m[2] }' "$work/h.csv"
else
	echo "(hyperfine not installed: make deps)"
fi
