#!/usr/bin/env bash
# contrib/demo.sh — a short tour of roster on a demo home ($REPO/demo-home,
# wiped first): make a home and a worker, list it, hold its store lock.
# `make demo` builds the suite into ./bin and runs this. (A temporary tour:
# the full demo, a dispatcher running a real box, replaces it.)
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$repo/bin:$PATH"
export ROSTER_EXEC_PATH="$repo/bin"
export ROSTER_HOME="$repo/demo-home"

if ! command -v roster >/dev/null; then
	echo "demo: no roster in $repo/bin: run make build" >&2
	exit 1
fi
rm -rf "$ROSTER_HOME"
mkdir -p "$ROSTER_HOME"
echo "# demo home: $ROSTER_HOME"

failed=0
# program names the program a `roster WORD ...` route runs (roster(1)).
program() {
	case $1 in
	init | worker) echo roster-task ;;
	server) echo roster-dispatch ;;
	connection) echo roster-box ;;
	*) echo "roster-$1" ;;
	esac
}

# step shows a command, then runs it; one whose program is not built yet
# is skipped.
step() {
	echo
	echo "\$ $*"
	local prog
	prog=$(program "$2")
	if ! command -v "$prog" >/dev/null; then
		echo "(skipped: $prog is not built yet)"
		return 0
	fi
	"$@"
	local rc=$?
	if [ $rc -ne 0 ]; then
		echo "(exit status $rc)"
		failed=1
	fi
}

step roster init
step roster worker add dobby
step roster worker ls
step roster lock store --worker dobby -- echo "holding the store lock"
step roster lock --ls --worker dobby

echo
if [ $failed -ne 0 ]; then
	echo "# the tour hit an error above"
	exit 1
fi
echo "# done; look around: ls -R $ROSTER_HOME"
