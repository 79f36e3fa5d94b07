#!/usr/bin/env bash
# bench/gateway.sh — a model call and small requests through a run's
# gateway (with the in-box relay's hop) against the same local upstream
# called directly, side by side in one run (bench/gwbench). Prints the
# added latency (median, p99), the time to the first streamed byte,
# requests/s through one gateway, and the memory of 100 open tunnels.
# Loopback only. Report only: never part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/gwbench "$@"
