#!/usr/bin/env bash
# bench/box.sh — a trivial box (/bin/true) start to exit, side by side in
# one run: roster-box run (ad hoc, with every bind of a real box) vs
# Debian's `runc run` on an OCI bundle with the same binds vs bwrap with
# the same binds. Prints medians and ratios, where roster-box's time goes
# (ROSTER_BOX_TRACE, per step), and the supervisor's peak RSS.
# Needs root, the suite built in ./bin (make build), runc, bwrap, hyperfine,
# jq. Report only: never part of `make test`.
set -euo pipefail
BIN=${BIN:-$(pwd)/bin}
RUNS=${RUNS:-40}
TRACE_RUNS=${TRACE_RUNS:-20}
ROUNDS=${ROUNDS:-40}
[ "$(id -u)" = 0 ] || { echo "bench/box.sh: needs root" >&2; exit 1; }
for p in runc bwrap hyperfine jq; do command -v $p >/dev/null || { echo "bench/box.sh: $p missing (make deps)" >&2; exit 1; }; done

work=$(mktemp -d /tmp/roster-bench-box.XXXXXX)
# The supervisors exit inside their worker's host cgroup: swept at the end.
trap '"$work/bin/roster-box" reap --cgroups 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
# Only the programs a box needs: the snapshot after each run is not part of
# starting a box (roster-snap missing => "snapshots unavailable").
mkdir -p "$work/bin"
cp "$BIN/roster-box" "$BIN/roster-task" "$BIN/roster-lock" "$BIN/roster-reaper" "$work/bin/"
export ROSTER_EXEC_PATH="$work/bin" ROSTER_HOME="$work/home"
"$work/bin/roster-task" init >/dev/null 2>&1
"$work/bin/roster-task" worker add bench --command /bin/true --heartbeat off >/dev/null 2>&1
uid=$(sed -n 's/^uid *= *\([0-9]*\).*/\1/p' "$ROSTER_HOME/workers/bench.toml")
W="$ROSTER_HOME/data/workers/bench"
chmod 0755 "$W/store" # bwrap (which drops its capabilities) must traverse it to reach .locks

# The same binds for runc and bwrap: /usr ro, generated /etc, tmpfs /tmp
# /run $HOME, the store rw, locks, view and runs ro, outbox rw, the tools.
mkdir -p "$work/etc/ssl/certs" "$work/self/view" "$work/self/runs" "$work/self/outbox" "$work/outbox"
echo "worker:x:$uid:$uid::/home/worker:/bin/sh" >"$work/etc/passwd"
echo "worker:x:$uid:" >"$work/etc/group"
echo "# briefing" >"$work/self/briefing.md"
b="$work/bundle"; mkdir -p "$b/rootfs"
(cd "$b/rootfs" && mkdir -p usr etc home/worker tmp run proc dev opt/roster/bin && ln -s usr/bin bin && ln -s usr/lib lib && ln -s usr/lib64 lib64 && ln -s usr/sbin sbin && touch opt/roster/bin/roster-task opt/roster/bin/roster-lock opt/roster/bin/roster-reaper)
(cd "$b" && runc spec)
bind() { printf '{"destination":"%s","type":"bind","source":"%s","options":["rbind","%s","nosuid","nodev"]}' "$2" "$1" "$3"; }
tmpfs() { printf '{"destination":"%s","type":"tmpfs","source":"tmpfs","options":["nosuid","nodev","mode=%s"]}' "$1" "$2"; }
mounts="[$(bind /usr /usr ro),$(bind "$work/etc" /etc ro),$(bind /etc/ssl/certs /etc/ssl/certs ro),$(tmpfs /tmp 1777),$(tmpfs /run 755),$(tmpfs /home/worker 755),\
$(bind "$W/store" /home/worker/store rw),$(bind "$W/locks" /home/worker/store/.locks rw),$(bind "$work/self" /home/worker/self ro),\
$(bind "$W/view" /home/worker/self/view ro),$(bind "$W/runs" /home/worker/self/runs ro),$(bind "$work/outbox" /home/worker/self/outbox rw),\
$(bind "$BIN/roster-task" /opt/roster/bin/roster-task ro),$(bind "$BIN/roster-lock" /opt/roster/bin/roster-lock ro),$(bind "$BIN/roster-reaper" /opt/roster/bin/roster-reaper ro)]"
jq --argjson m "$mounts" --argjson uid "$uid" '
  .process.terminal=false | .process.args=["/bin/true"] | .process.user={uid:$uid,gid:$uid}
  | .process.capabilities={} | .root.readonly=true
  | .mounts = ([.mounts[] | select(.destination=="/proc" or .destination=="/dev" or .destination=="/dev/pts" or .destination=="/dev/shm")] + $m)
  | .linux.namespaces += [{"type":"cgroup"}]' "$b/config.json" >"$b/config.json.new" && mv "$b/config.json.new" "$b/config.json"
runc --root "$work/runc-state" run -b "$b" bench-check >/dev/null </dev/null || { echo "bench/box.sh: runc cannot run the bundle" >&2; exit 1; }
# The same bundle with roster-box's pid 1 (the reaper, roster-reaper) in
# front of /bin/true: what the box's reaper costs runc.
b2="$work/bundle-reaper"; mkdir -p "$b2"
jq --arg r "$b/rootfs" '.root.path=$r | .process.args=["/opt/roster/bin/roster-reaper","--","/bin/true"]' \
  "$b/config.json" >"$b2/config.json"
runc --root "$work/runc-state" run -b "$b2" bench-check2 >/dev/null </dev/null || { echo "bench/box.sh: runc cannot run the reaper bundle" >&2; exit 1; }

bw="bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin \
--ro-bind $work/etc /etc --ro-bind /etc/ssl/certs /etc/ssl/certs --proc /proc --dev /dev --tmpfs /tmp --tmpfs /run --tmpfs /home/worker \
--bind $W/store /home/worker/store --bind $W/locks /home/worker/store/.locks --ro-bind $work/self /home/worker/self \
--ro-bind $W/view /home/worker/self/view --ro-bind $W/runs /home/worker/self/runs --bind $work/outbox /home/worker/self/outbox \
--ro-bind $BIN/roster-task /opt/roster/bin/roster-task --ro-bind $BIN/roster-lock /opt/roster/bin/roster-lock \
--ro-bind $BIN/roster-reaper /opt/roster/bin/roster-reaper /bin/true"

echo "== a trivial box, start to exit ($RUNS runs each, 2 warm-up)"
hyperfine -N -w 2 -r "$RUNS" --export-json "$work/h.json" \
  -n roster-box "$work/bin/roster-box run bench -- /bin/true" \
  -n runc "runc --root $work/runc-state run -b $b bench" \
  -n runc+reaper "runc --root $work/runc-state run -b $b2 bench2" \
  -n bwrap "$bw" >/dev/null
jq -r '.results[] | [.command, (.median*1000), (.mean*1000), (.stddev*1000)] | @tsv' "$work/h.json" |
  awk -F'\t' 'BEGIN{printf "%-12s %10s %10s %10s\n","tool","median ms","mean ms","stddev"} {printf "%-12s %10.1f %10.1f %10.1f\n",$1,$2,$3,$4; m[$1]=$2}
  END{printf "ratio roster-box/runc  %.2fx (target <= 1.0)\nratio roster-box/runc+reaper %.2fx (the same pid 1 in both)\nratio roster-box/bwrap %.2fx\n", m["roster-box"]/m["runc"], m["roster-box"]/m["runc+reaper"], m["roster-box"]/m["bwrap"]}'

# hyperfine runs each tool's runs one after the other: when the load
# changes meanwhile (other work on the machine), its ratios are biased by
# tens of percent. Here each round runs the four once each, in an order
# that rotates, and a round's ratio compares runs made seconds apart.
echo "== paired: $ROUNDS rounds, each tool once per round (rotating order); medians of the runs and of each round's ratio (load $(cut -d' ' -f1-3 /proc/loadavg))"
names=(roster-box runc runc+reaper bwrap)
cmds=("$work/bin/roster-box run bench -- /bin/true" "runc --root $work/runc-state run -b $b bench" "runc --root $work/runc-state run -b $b2 bench2" "$bw")
for r in $(seq "$ROUNDS"); do
  for k in 0 1 2 3; do
    i=$(((k + r) % 4))
    s=$EPOCHREALTIME
    ${cmds[$i]} >/dev/null 2>&1 </dev/null || true
    e=$EPOCHREALTIME
    printf '%d\t%s\t%s\n' "$r" "${names[$i]}" "$(awk -v s="$s" -v e="$e" 'BEGIN {printf "%.3f", (e - s) * 1000}')"
  done
done >"$work/paired.tsv"
awk -F'\t' '{t[$1, $2] = $3; r[$1] = 1; n[$2]++}
  END {for (i in r) {print "A", "roster-box", t[i, "roster-box"]; print "A", "runc", t[i, "runc"]; print "A", "runc+reaper", t[i, "runc+reaper"]; print "A", "bwrap", t[i, "bwrap"];
    print "R", "runc", t[i, "roster-box"] / t[i, "runc"]; print "R", "runc+reaper", t[i, "roster-box"] / t[i, "runc+reaper"]}}' "$work/paired.tsv" |
  sort -k1,1 -k2,2 -k3,3n | awk '{v[$1 " " $2, ++c[$1 " " $2]] = $3}
  END {for (k in c) m[k] = v[k, int((c[k] + 1) / 2)]
    printf "%-12s %10s\n", "tool", "median ms"; split("roster-box runc runc+reaper bwrap", ts, " ")
    for (j = 1; j <= 4; j++) printf "%-12s %10.1f\n", ts[j], m["A " ts[j]]
    printf "paired ratio roster-box/runc  %.2fx (median of the rounds; target <= 1.0)\npaired ratio roster-box/runc+reaper %.2fx\n", m["R runc"], m["R runc+reaper"]}'

echo "== where roster-box's time goes (ROSTER_BOX_TRACE=1, median of $TRACE_RUNS runs: ms in each step, ms since start)"
for i in $(seq "$TRACE_RUNS"); do
  ROSTER_BOX_TRACE=1 "$work/bin/roster-box" run bench -- /bin/true 2>&1 >/dev/null | sed -n "s/^roster-box: trace: //p" |
    awk '{s = $1; for (j = 2; j <= NF-4; j++) s = s " " $j; printf "%03d\t%s\t%s\t%s\n", NR, s, $(NF-3), $(NF-1)}'
done >"$work/trace.tsv"
for k in $(cut -f1 "$work/trace.tsv" | sort -u); do
  step=$(awk -F'\t' -v k="$k" '$1 == k {print $2; exit}' "$work/trace.tsv")
  d=$(awk -F'\t' -v k="$k" '$1 == k {print $3}' "$work/trace.tsv" | sort -n | awk '{a[NR] = $1} END {print a[int((NR+1)/2)]}')
  t=$(awk -F'\t' -v k="$k" '$1 == k {print $4}' "$work/trace.tsv" | sort -n | awk '{a[NR] = $1} END {print a[int((NR+1)/2)]}')
  printf "%-30s %7.2f %8.2f\n" "$step" "$d" "$t"
done
# Per run, the supervisor's own time: the whole less libcontainer's set-up
# and the box's life (pid 1 and /bin/true), steadier than the wall-clock
# medians when others load the machine.
awk -F'\t' '$1 == "001" {r++} $2 == "container set up" {cs[r] = $3} $2 == "box exited" {bx[r] = $3} $2 == "done" {t[r] = $4}
  END {for (i = 1; i <= r; i++) print t[i] - cs[i] - bx[i]}' "$work/trace.tsv" | sort -n |
  awk '{a[NR] = $1} END {printf "%-30s %7.2f (median of %d runs: the whole less set-up and box)\n", "roster-box own", a[int((NR+1)/2)], NR}'

echo "== supervisor peak memory (max RSS of roster-box run, one trivial box)"
/usr/bin/time -f "%M KiB" "$work/bin/roster-box" run bench -- /bin/true 2>&1 >/dev/null | tail -n 1
echo "== roster-box binary size (executed twice per box: the supervisor and the container's init)"
stat -c "%s bytes" "$BIN/roster-box"
