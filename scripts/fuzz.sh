#!/usr/bin/env bash
# Runs a coverage-guided fuzz target (libFuzzer via cargo-fuzz) seeded from the fixtures.
#   scripts/fuzz.sh [TARGET] [SECONDS]      TARGET: reader (default), shrink_verify or analyze
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain use them.
# Crashes land in fuzz/artifacts/TARGET/; each one found becomes a regression test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-reader}
seconds=${2:-60}
export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
corpus="$root/fuzz/corpus/$target"
mkdir -p "$corpus"
# Seeds: the small fixtures (the HotSpot one is too large to mutate usefully).
for f in "$root"/fixtures/art-*.hprof "$root"/fixtures/synthetic-*.hprof; do
  cp -n "$f" "$corpus/" 2>/dev/null || true
done
cd "$root/fuzz"
extra=()
# The verifier's walks run on threads; LeakSanitizer reports the C library's per-thread
# destructor list of each one as a leak (32 bytes, __cxa_thread_atexit_impl), not ours.
[ "$target" = shrink_verify ] && extra+=(-detect_leaks=0)
cargo fuzz run "$target" "$corpus" -- -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -max_len=400000 "${extra[@]}"
