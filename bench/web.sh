#!/usr/bin/env bash
# bench/web.sh — the web console's overview (issue 29, goal 5: <= 100 ms
# for 100 workers with 100,000 runs): the page served whole, every
# worker's row read and rendered, on a home built by lib/web/webtest
# (100 workers, 1,000 runs each over 100 days). Report only. Needs root
# (worker add). ROSTER_WEB_BENCH_WORKERS / _RUNS change the size.
#
# Figures (2 cores, shared with other work):
#   2026-12-07: 204 ms a page at load 4, 304 and 354 ms at load 4-8; 120 ms
#     at load 1. Of its CPU, two listings of each worker's runs/ (1,000
#     entries) were most: tms's budget measure and the usage index's look
#     for runs without a row.
#   2026-12-07, with runs.CacheIDs (a listing kept by the folder's
#     identity): 43-53 ms a page at load 1.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
go test -tags seccomp -run '^$' -bench BenchmarkOverview100Workers100kRuns -benchtime 10x ./lib/web/ | grep -E 'Benchmark|ok|FAIL'
