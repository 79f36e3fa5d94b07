#!/usr/bin/env bash
# bench/git.sh — the gateway's git route against the same git served
# directly (bench/gitbench): a clone of a ~50 MB repo and a push of a
# ~10 MB change, each side once per round, medians and ratios. The remote
# is git http-backend on 127.0.0.1. Report only: never part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git >/dev/null || { echo "bench/git.sh: git missing"; exit 1; }
go run ./bench/gitbench "$@"
