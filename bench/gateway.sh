#!/usr/bin/env bash
# bench/gateway.sh — a model call and small requests through a run's
# gateway (with the in-box relay's hop) against the same local upstream
# called directly, side by side in one run (bench/gwbench). Prints the
# added latency (median, p99), the time to the first streamed byte,
# requests/s through one gateway, and the memory of 100 open tunnels.
# Loopback only. Report only: never part of `make test`.
#
# Each part runs in a process of its own (clients, relay, gateway,
# upstream), each reporting its CPU per request. On a loaded machine,
# count instructions instead, which the load does not change: build it
# (go build -o /tmp/gwbench ./bench/gwbench), run
#   GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --trace-children=yes \
#     --callgrind-out-file=cg.%p /tmp/gwbench -count N -c 8
# for two N (500, 1500), and divide the difference of the gateway
# process's totals (its cg file's cmd: names "-serve gateway") by the
# difference of N: start-up and warm-up cancel out.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/gwbench "$@"
