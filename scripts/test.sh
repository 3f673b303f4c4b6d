#!/usr/bin/env bash
# Runs every check the project has: formatting, lints, and all tests of the workspace.
# CI runs this same script (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "cargo clippy with the C ABI (the core's ffi feature)"
cargo clippy --workspace --all-targets --features hprof-shrink-core/ffi --quiet -- -D warnings

step "python environment for the S3 upload test (moto, boto3)"
HPROF_SHRINK_PYTHON=$(bash scripts/setup-python.sh)
export HPROF_SHRINK_PYTHON
echo "$HPROF_SHRINK_PYTHON"

step "chromium and chromedriver for the browser test of serve"
mkdir -p target
if HPROF_SHRINK_CHROMEDRIVER=$(bash scripts/setup-chromium.sh 2>target/setup-chromium.log); then
  export HPROF_SHRINK_CHROMEDRIVER
  echo "$HPROF_SHRINK_CHROMEDRIVER"
else
  # apt did not work here: the browser test skips, saying why, instead of failing.
  HPROF_SHRINK_NO_CHROMIUM="scripts/setup-chromium.sh failed: $(tail -n 3 target/setup-chromium.log | tr '\n' ' ')"
  export HPROF_SHRINK_NO_CHROMIUM
  echo "$HPROF_SHRINK_NO_CHROMIUM"
fi

# With the C ABI on, so its tests (shrink/tests/ffi.rs, the header check) run too. On for
# the whole workspace, not only `-p hprof-shrink-core`: the core's library files carry no
# hash in their names (it is also a cdylib), so builds with other features would overwrite
# them and rebuild each other. scripts/c-test.sh takes its libraries from this same build.
step "cargo test (the core with its C ABI: feature ffi)"
cargo test --workspace --features hprof-shrink-core/ffi

step "the core as Rust callers get it (no C ABI) builds"
cargo check -p hprof-shrink-core --quiet

step "the core for Android: checked for three targets with and without the C ABI, the phone's library linked and its exports checked"
bash scripts/android-check.sh --build-targets aarch64-linux-android

step "C ABI test (tests/c, against the shared and the static library)"
bash scripts/c-test.sh
