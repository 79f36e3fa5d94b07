#!/usr/bin/env bash
# bench/run.sh — runs every other bench/*.sh in turn, with the suite built
# in ./bin first on PATH, under a header per bench. `make bench` runs it
# after `make deps build`. A bench that fails is reported and the rest
# still run; the exit status says whether any failed. Figures are for
# reading, never pass/fail.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export BIN=${BIN:-$repo/bin}
export PATH="$BIN:$PATH"
[ -x "$BIN/roster" ] || { echo "bench/run.sh: no suite in $BIN (run make build)" >&2; exit 1; }

failed=()
for b in bench/*.sh; do
	[ "$b" = bench/run.sh ] && continue
	echo
	echo "################ $(basename "$b" .sh) ################"
	start=$(date +%s)
	# Each bench starts with the disk's dirty data written (the build's
	# binaries, the bench before): it would otherwise queue in front of
	# the first fsyncs a bench times, roster's and not its peers'.
	sync
	if ! bash "$b"; then
		failed+=("$(basename "$b")")
		echo "bench/run.sh: $(basename "$b") failed" >&2
	fi
	echo "(took $(($(date +%s) - start))s)"
done
echo
if [ ${#failed[@]} -gt 0 ]; then
	echo "benches that failed: ${failed[*]}"
	exit 1
fi
echo "all benches ran"
