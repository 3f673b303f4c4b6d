#!/usr/bin/env bash
# Speed and memory of hprof-shrink against cat, cp and gzip on generated ~200 MB and ~1 GB
# Android-shaped HotSpot dumps (cached in ~/.cache/hprof-shrink-bench, or
# $HPROF_SHRINK_BENCH_DIR). Needs Java 17, Python 3 and gzip. Options: --quick (200 MB
# dumps only), --runs N (best of N, default 3), --baseline EXE (also time another build, the analysis in
# pairs back to back, and print new/base), --analyze-only (only the analysis rows: analyze, diff, growth), --shrink-only (no analysis rows),
# --sizes 200,1000 (which sizes, in MB, at least 10), --shapes array,object (which shapes:
# array, object, chains = 200-node chains, Strings and a large HashMap, ~26 million objects
# per GB, dense = many small primitive arrays, ~5x array's objects per GB; chains and dense
# are not in the default run; trace = a Perfetto heap-graph trace of an app's heap, ~60
# million objects per GB, written by test-support's app_trace example and only analyzed:
# s/GB of trace, its open step's, peak memory; never in a default run), --exe EXE (measure this binary, not a fresh release build),
# --serve-only (only serve's ingest: one server against two on one PostgreSQL, a core
# each, PostgreSQL from scripts/setup-postgres.sh; then the embedded default taking the
# 200 MB dumps' packages, with and without analysis). Also times
# libdeflate-gzip and pigz (installed from Debian when missing and root). Prints the table
# and the targets; writes target/bench/bench.json.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/bench.py "$@"
