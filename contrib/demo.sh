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

# tour prints a command exactly as README's tour shows it (so it can be
# copied: README.md's test runs those lines) and runs it in this shell.
tour() {
	echo
	echo "\$ $1"
	eval "$1"
}

cd "$repo" # the tour runs from a checkout: $PWD/contrib, $PWD/demo-home
tour 'export ROSTER_HOME=$PWD/demo-home'
tour 'roster init'
tour 'roster worker add demo --heartbeat off --role "You keep a notebook of short dated notes in your store." --command /bin/sh --command /home/worker/demo/demo-worker.sh'
tour 'cat >>"$ROSTER_HOME/workers/demo.toml" <<TOML

[[connection]]                # the demo worker'"'"'s script, read-only in its box
name = "demo"
path = "$PWD/contrib"
at = "demo"
mode = "ro"
TOML'
tour 'task=$(roster worker task add demo "Write today'"'"'s note"); echo $task'
tour 'roster server start --until-idle'
tour 'run=$(roster server runs ls --task $task --json | sed -n '"'"'s/.*"id":"\([^"]*\)".*/\1/p'"'"')'
if [ -z "$run" ]; then
	echo "demo: the task did not run" >&2
	exit 1
fi
tour 'roster server runs ls'
tour 'roster server runs show $run'
tour 'roster server runs log $run'
tour 'roster server runs changes $run'
tour 'roster snap ls demo'
tour 'roster worker task ls demo'

attested=$(roster server runs show "$run" --json | sed -n 's/.*"attested":"\([^"]*\)".*/\1/p')
echo
if [ "$attested" != completed ]; then
	echo "# the run was attested '$attested', not completed" >&2
	exit 1
fi

# An AI agent worker: the real pi (make deps-agents installs it into /usr),
# in a box, reaching its model only through the run's gateway. The model is
# scripted: contrib/fakemodel on 127.0.0.1 plays the Anthropic API as the
# anthropic provider's upstream, so the demo runs offline.
echo
echo "# an AI agent worker: pi, through the gateway; the model is scripted (contrib/fakemodel, offline)"
tmp=$(mktemp -d)
trap 'kill "${fakemodel_pid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/fakemodel" "$repo/contrib/fakemodel"
key="sk-ant-api03-demo-key-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
"$tmp/fakemodel" --key "$key" --script "$repo/contrib/demo-agent-script.json" >"$tmp/url" 2>"$tmp/calls.jsonl" &
fakemodel_pid=$!
for _ in $(seq 50); do [ -s "$tmp/url" ] && break; sleep 0.1; done
url=$(cat "$tmp/url")
echo "# the scripted model listens on $url; org.toml makes it the anthropic upstream"
printf '\n[gateway.anthropic]\nupstream = "%s"\n' "$url" >>"$ROSTER_HOME/org.toml"
echo "# the key goes into the vault, from stdin (root-only, mode 0600): the box only ever sees a placeholder"
echo "\$ roster key put anthropic <<<\"\$key\""
printf '%s\n' "$key" | roster key put anthropic
step roster key ls
step roster worker add scribe --agent pi --model claude-sonnet-4-5 --heartbeat off \
	--role "You keep a notebook of short notes in your store."
echo
echo "\$ roster worker task add scribe \"Write a note about today\""
atask=$(roster worker task add scribe "Write a note about today")
echo "$atask"
step roster server start --until-idle
arun=$(roster server runs ls --task "$atask" --json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -n1)
if [ -z "$arun" ]; then
	echo "demo: the agent's task did not run" >&2
	exit 1
fi
step roster server runs show "$arun"
step roster server runs changes "$arun"
echo
echo "# what the scripted model saw: the real key on every call (key_matched), never the box's placeholder"
sed 's/"last_user":"[^"]*",//' "$tmp/calls.jsonl"
aattested=$(roster server runs show "$arun" --json | sed -n 's/.*"attested":"\([^"]*\)".*/\1/p')
if [ "$aattested" != completed ]; then
	echo "# the agent's run was attested '$aattested', not completed" >&2
	exit 1
fi
echo
echo "# done: both tasks ran in boxes and were attested completed; look around: ls -R $ROSTER_HOME/data"
