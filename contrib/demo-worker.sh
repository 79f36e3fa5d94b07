#!/bin/sh
# contrib/demo-worker.sh — the demo worker's command (`make demo`).
#
# It runs inside a box as the worker's own user, granted read-only at
# $HOME/demo. Like any worker it reads its briefing, keeps what it learns
# in its store (under the store lock, as the briefing asks), files work for
# later, and reports how it went; the host attests the outcome from what
# actually happened.
set -eu

echo "demo-worker: run $ROSTER_RUN of task $ROSTER_TASK, as uid $(id -u)"
echo "demo-worker: my briefing says:"
sed -n '1,6p' "$ROSTER_BRIEFING" | sed 's/^/  | /'

# The note goes into the store under its lock: the host's snapshot after
# the run records it.
roster-lock store -- sh -c '
	mkdir -p "$HOME/store/notes"
	{
		echo "# note from run $ROSTER_RUN"
		echo
		echo "task: $ROSTER_TASK"
		echo "written: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	} > "$HOME/store/notes/$ROSTER_RUN.md"
	echo "demo-worker: wrote store/notes/$ROSTER_RUN.md"
'

# A follow-up for tomorrow (a scheduled task: nothing more is due now, so
# `roster-dispatch --until-idle` ends after this run).
if ! grep -q "Follow up" "$ROSTER_BRIEFING"; then
	id=$(roster-task file "Follow up on today's note" --at +24h)
	echo "demo-worker: filed $id for tomorrow"
fi

roster-task complete "wrote a note and filed a follow-up"
