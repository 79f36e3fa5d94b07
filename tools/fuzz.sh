#!/usr/bin/env bash
# make fuzz: run every fuzz target of the module for FUZZTIME each (first
# argument, default 5s), one after another. A target's seed corpus is its
# f.Add calls plus testdata/fuzz/NAME/ beside its test file; an input that
# fails is written there by `go test` itself, so it becomes a committed
# regression case (commit it with the fix). Exit 1 when any target failed,
# after running them all.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-5s}
failed=()
n=0
start=$SECONDS
while IFS=: read -r file name; do
	dir=$(dirname "$file")
	name=${name#func }
	n=$((n + 1))
	t0=$SECONDS
	# A run that ends in "context deadline exceeded" without writing a
	# failing input found nothing: a worker was still busy when the time
	# ran out (a loaded machine stalls I/O). It is tried again, twice at
	# most; a third stall fails (it may be an input that hangs).
	ok=false
	for try in 1 2 3; do
		if out=$(go test -tags seccomp -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "./$dir" 2>&1); then
			ok=true
			break
		fi
		if ! grep -q 'context deadline exceeded' <<<"$out" || grep -q 'Failing input written' <<<"$out"; then
			break
		fi
		echo "stall $dir $name (try $try: the time ran out mid-input, no failing input found)"
	done
	if $ok; then
		echo "ok    $dir $name ($((SECONDS - t0))s)"
	else
		echo "FAIL  $dir $name"
		echo "$out" | sed 's/^/      /' | tail -40
		failed+=("$dir $name")
	fi
done < <(grep -roE '^func Fuzz[A-Za-z0-9_]+' --include='*_test.go' cmd lib internal tools 2>/dev/null | sort)
echo "fuzz: $n targets, $fuzztime each, $((SECONDS - start))s in all"
if [ ${#failed[@]} -gt 0 ]; then
	printf '  failed: %s\n' "${failed[@]}"
	echo "  the failing inputs are under each package's testdata/fuzz/NAME/"
fi
echo "fuzz: $((n - ${#failed[@]})) passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
