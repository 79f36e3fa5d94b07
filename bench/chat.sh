#!/usr/bin/env bash
# bench/chat.sh — chat latency (issue 26, docs/channels.md): a real
# roster-dispatch, which runs roster-chat serve with an exec account
# (contrib/chat-bridge/file-bridge), and a worker whose live session is a
# plain command that stamps the time each message reaches it on stdin.
# From the conversation record and those stamps:
#   intake:  message logged (received) -> relay filed
#   cold:    message logged -> the box's command has it (box start included)
#   warm:    the same for the next messages of the live session (the
#            design's target: host overhead <= 50 ms median)
#   busy:    warm again while 3 batch tasks of another worker run (target:
#            no worse than idle)
# N messages per phase (default 15), GAP seconds apart (default 0.4).
# Needs root (real boxes) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
BIN=${BIN:-$PWD/bin}
export PATH=$BIN:$PATH ROSTER_EXEC_PATH=$BIN
N=${N:-15}
GAP=${GAP:-0.4}
[ "$(id -u)" = 0 ] || { echo "chat bench: needs root (real boxes); skipped"; exit 0; }
command -v python3 >/dev/null || { echo "chat bench: needs python3; skipped"; exit 0; }
work=$(mktemp -d)
export ROSTER_HOME=$work/h
disp=
cleanup() {
	[ -n "$disp" ] && kill -INT "$disp" 2>/dev/null && wait "$disp" 2>/dev/null
	roster-box kill --all >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
roster init >/dev/null 2>&1
roster worker add dobby --command /bin/true --heartbeat off --uid 291500 >/dev/null
roster worker add batch --command /bin/sh --command=-c --command 'sleep 600' --heartbeat off --uid 291501 --concurrency 3 >/dev/null
cat > "$ROSTER_HOME/workers/dobby.toml" <<'SPEC'
uid = 291500
heartbeat = "off"
command = ["/bin/sh", "-c", 'while IFS= read -r l; do date +%s.%N >> ~/store/got; echo "{\"type\":\"turn_end\",\"text\":\"ok\"}"; done']

[[channel]]
account = "desk"
chats = ["alice"]
owners = ["alice"]
live = "10m"
SPEC
mkdir -p "$work/spool/in"
sed -i 's/^# *cap = .*/cap = 4/' "$ROSTER_HOME/org.toml"
cat >> "$ROSTER_HOME/org.toml" <<ORG

[chat.desk]
protocol = "exec"
command = ["python3", "$repo/contrib/chat-bridge/file-bridge", "--from", "alice", "$work/spool"]
ORG
got=$ROSTER_HOME/data/workers/dobby/store/got
roster-dispatch --poll 200ms 2>"$work/dispatch.log" &
disp=$!
say() { # say NAME: one message, then wait until the command has it
	local want=$(($( [ -f "$got" ] && wc -l <"$got" || echo 0) + 1))
	echo "message $1" >"$work/spool/in/$1.tmp" && mv "$work/spool/in/$1.tmp" "$work/spool/in/$1.txt"
	for _ in $(seq 600); do
		[ -f "$got" ] && [ "$(wc -l <"$got")" -ge "$want" ] && return
		sleep 0.05
	done
	echo "chat bench: message $1 never reached the box" >&2; tail -20 "$work/dispatch.log" >&2; exit 1
}
for i in $(seq "$N"); do say "idle$i"; sleep "$GAP"; done
for i in 1 2 3; do roster-task add batch "batch $i" >/dev/null; done
for _ in $(seq 200); do [ "$(roster-task ls batch --json | grep -c '"state":"claimed"')" -ge 3 ] && break; sleep 0.1; done
for i in $(seq "$N"); do say "busy$i"; sleep "$GAP"; done
roster chat log dobby desk:alice --json >"$work/log.jsonl"
python3 - "$work/log.jsonl" "$got" "$N" <<'PY'
import json, sys, statistics
from datetime import datetime
lines = [json.loads(l) for l in open(sys.argv[1])]
got = [float(l) for l in open(sys.argv[2])]
n = int(sys.argv[3])
def ts(s):
    s = s.rstrip("Z")
    head, _, frac = s.partition(".")
    return datetime.fromisoformat(head + "+00:00").timestamp() + float("0." + (frac or "0"))
recv = [l for l in lines if l["dir"] == "in" and l["state"] == "received"]
filed = {l["of"]: ts(l["at"]) for l in lines if l.get("state") == "filed"}
intake = [(filed[r["seq"]] - ts(r["at"])) * 1000 for r in recv if r["seq"] in filed]
lat = [(g - ts(r["at"])) * 1000 for r, g in zip(recv, got)]
def show(name, xs):
    xs = sorted(xs)
    print(f"{name:34s} median {statistics.median(xs):7.1f} ms   p90 {xs[int(len(xs)*0.9)-1]:7.1f} ms   (n={len(xs)})")
show("intake: logged -> relay filed", intake)
print(f"{'cold: logged -> in the box':34s} {lat[0]:7.1f} ms (box start included)")
show("warm, idle: logged -> in the box", lat[1:n])
show("warm, 3 batch runs: logged -> box", lat[n:])
print(f"busy/idle warm median ratio: {statistics.median(lat[n:]) / statistics.median(lat[1:n]):.2f}x")
PY
