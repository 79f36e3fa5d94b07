#!/usr/bin/env bash
# bench/hostcpu.sh — host_cpus (issue 27, "Host CPU"): a worker flooding
# its own gateway (8 threads, connection after connection, every request
# refused) beside a worker's CPU-bound run, three times: the flood's
# supervisor-and-gateway CPU share against its host_cpus (a quarter core
# here), and the CPU-bound run's time beside the flood over its time alone
# (the red team measured 3x before the fix). It runs the end-to-end test
# that asserts the bound loosely (cmd/roster-dispatch,
# TestFloodingWorkerStaysWithinHostCPUs) and prints its figures. Needs
# root (real boxes) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "hostcpu bench: needs root (real boxes); skipped"; exit 0; }
command -v python3 >/dev/null || { echo "hostcpu bench: needs python3; skipped"; exit 0; }
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
out=$(go test -tags seccomp -count=3 -v -run '^TestFloodingWorkerStaysWithinHostCPUs$' ./cmd/roster-dispatch 2>&1) || { echo "$out" | tail -20; exit 1; }
echo "$out" | grep -o 'flood: .*' | awk '
{ for (i = 1; i <= NF; i++) {
	if ($i == "used") share = $(i+1)
	if ($i == "alone") alone = $(i+1)
	if ($i == "flood") beside = $(i+1)
  }
  gsub(/s/, "", alone); gsub(/s/, "", beside)
  printf "flood supervisor %.2f core (host_cpus 0.25); CPU-bound run %.3fs alone, %.3fs beside the flood: %.2fx\n", share, alone, beside, beside / alone
}'
