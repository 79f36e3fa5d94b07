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
# When go is installed it also times "go-floor", a Go program that only
# opens, flocks, fork-execs and waits (no parsing, no checks, no signal
# forwarding): the share of the ratio that is Go's own start-up.
# BASE=/path/to/an/earlier/roster-lock times that build too, in the same
# interleaved loop (before and after a change, under the same load).
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
true_bin=$(type -P true)
rl=("$BIN/roster-lock" --home "$home" L --worker bench -- "$true_bin")
fl=(flock "$work/L" "$true_bin")
base=()
[ -n "${BASE:-}" ] && base=("$BASE" --home "$home" L --worker bench -- "$true_bin")
"${rl[@]}" && "${fl[@]}" || { echo "bench/lock.sh: a command failed" >&2; exit 1; }
[ ${#base[@]} -eq 0 ] || "${base[@]}" || { echo "bench/lock.sh: BASE failed" >&2; exit 1; }
floor=()
if command -v go >/dev/null; then
	mkdir "$work/floor"
	cat >"$work/floor/main.go" <<'GO'
package main

import (
	"os"
	"syscall"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		os.Exit(1)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	pid, err := syscall.ForkExec(os.Args[2], os.Args[2:], &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		os.Exit(127)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	os.Exit(ws.ExitStatus())
}
GO
	printf 'module floor\ngo 1.21\n' >"$work/floor/go.mod"
	if (cd "$work/floor" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/go-floor" . 2>/dev/null); then
		touch "$work/F"
		floor=("$work/go-floor" "$work/F" "$true_bin")
	fi
fi

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2]+a[NR/2+1])/2}'; }
us() { # microseconds between two $EPOCHREALTIME values
	local a=${1/./} b=${2/./}
	echo $((10#$b - 10#$a))
}

echo "== uncontended lock + true: roster-lock vs flock(1), $N interleaved runs each (load $(cut -d' ' -f1-3 /proc/loadavg))"
for i in $(seq 20); do "${rl[@]}"; "${fl[@]}"; done # warm-up
: >"$work/rl.us"
: >"$work/fl.us"
: >"$work/go.us"
: >"$work/base.us"
for i in $(seq "$N"); do
	t0=$EPOCHREALTIME; "${rl[@]}"; t1=$EPOCHREALTIME
	"${fl[@]}"; t2=$EPOCHREALTIME
	us "$t0" "$t1" >>"$work/rl.us"
	us "$t1" "$t2" >>"$work/fl.us"
	if [ ${#floor[@]} -gt 0 ]; then
		t0=$EPOCHREALTIME; "${floor[@]}"; t1=$EPOCHREALTIME
		us "$t0" "$t1" >>"$work/go.us"
	fi
	if [ ${#base[@]} -gt 0 ]; then
		t0=$EPOCHREALTIME; "${base[@]}"; t1=$EPOCHREALTIME
		us "$t0" "$t1" >>"$work/base.us"
	fi
done
m_rl=$(median <"$work/rl.us")
m_fl=$(median <"$work/fl.us")
awk -v r="$m_rl" -v f="$m_fl" 'BEGIN {
	printf "  %-12s median %6.2f ms\n  %-12s median %6.2f ms\n", "roster-lock", r / 1000, "flock", f / 1000
	printf "  ratio roster-lock/flock: %.2f (target <= 1.5)\n", r / f
}'
if [ -s "$work/base.us" ]; then
	m_base=$(median <"$work/base.us")
	awk -v b="$m_base" -v f="$m_fl" -v r="$m_rl" 'BEGIN {
		printf "  %-12s median %6.2f ms (ratio to flock %.2f; roster-lock/BASE %.2f)\n", "BASE", b / 1000, b / f, r / b
	}'
fi
if [ -s "$work/go.us" ]; then
	m_go=$(median <"$work/go.us")
	awk -v g="$m_go" -v f="$m_fl" 'BEGIN {
		printf "  %-12s median %6.2f ms (ratio to flock %.2f: Go start-up + fork/exec alone)\n", "go-floor", g / 1000, g / f
	}'
fi

if command -v hyperfine >/dev/null; then
	echo "== the same with hyperfine -N ($N runs each, 20 warm-up, one after the other)"
	extra=()
	[ ${#floor[@]} -gt 0 ] && extra=(-n go-floor "${floor[*]}")
	hyperfine -N -w 20 -r "$N" --export-csv "$work/h.csv" \
		-n roster-lock "${rl[*]}" -n flock "${fl[*]}" "${extra[@]}" >/dev/null 2>&1
	# command,mean,stddev,median,user,system,min,max
	awk -F, 'NR > 1 { m[NR - 1] = $4; printf "  %-12s median %6.2f ms\n", $1, $4 * 1000 }
		END { printf "  ratio roster-lock/flock: %.2f (target <= 1.5)\n", m[1] / m[2]
			if (3 in m) printf "  ratio go-floor/flock: %.2f\n", m[3] / m[2] }' "$work/h.csv"
else
	echo "(hyperfine not installed: make deps)"
fi
