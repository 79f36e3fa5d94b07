#!/usr/bin/env bash
# contrib/demo.sh — roster's main job, end to end (`make demo`).
#
# On a fresh demo home ($REPO/demo-home, wiped first): make a worker whose
# command is contrib/demo-worker.sh (granted to its box read-only), file a
# task, run the dispatcher until idle (a real box: the worker reads its
# briefing, writes a note into its store under the store lock, files a
# follow-up and reports complete), then show the run record, what the run
# changed in the store and the snapshot taken after it. Needs root (boxes
# are containers); `make demo` builds the suite into ./bin first.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$repo/bin:$PATH"
export ROSTER_EXEC_PATH="$repo/bin"
export ROSTER_HOME="$repo/demo-home"

if ! command -v roster-dispatch >/dev/null || ! command -v roster-box >/dev/null; then
	echo "demo: the suite is not built in $repo/bin: run make build" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "demo: boxes are containers: run it as root (sudo make demo)" >&2
	exit 1
fi
chmod 0755 "$repo/contrib"
chmod 0644 "$repo/contrib/demo-worker.sh"

rm -rf "$ROSTER_HOME"
mkdir -p "$ROSTER_HOME"
echo "# demo home: $ROSTER_HOME"

step() {
	echo
	echo "\$ $*"
	"$@"
}

step roster init
step roster worker add demo --heartbeat off \
	--role "You keep a notebook of short dated notes in your store." \
	--command /bin/sh --command /home/worker/demo/demo-worker.sh
cat >>"$ROSTER_HOME/workers/demo.toml" <<TOML

[[connection]]                # the demo worker's script, read-only in its box
name = "demo"
path = "$repo/contrib"
at = "demo"
mode = "ro"
TOML
echo
echo "\$ roster worker task add demo \"Write today's note\""
task=$(roster worker task add demo "Write today's note")
echo "$task"

step roster server start --until-idle

run=$(roster server runs ls --task "$task" --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -n1)
if [ -z "$run" ]; then
	echo "demo: the task did not run" >&2
	exit 1
fi
step roster server runs ls
step roster server runs show "$run"
step roster server runs log "$run"
step roster server runs changes "$run"
step roster snap ls demo
step roster worker task ls demo

attested=$(roster server runs show "$run" --json | sed -n 's/.*"attested":"\([^"]*\)".*/\1/p')
echo
if [ "$attested" != completed ]; then
	echo "# the run was attested '$attested', not completed" >&2
	exit 1
fi
echo "# done: the task ran in a box and was attested completed; look around: ls -R $ROSTER_HOME/data"
