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

step "python environment for the S3 upload test (moto, boto3)"
HPROF_SHRINK_PYTHON=$(bash scripts/setup-python.sh)
export HPROF_SHRINK_PYTHON
echo "$HPROF_SHRINK_PYTHON"

step "cargo test"
cargo test --workspace

step "the core without its default features (no C ABI) builds"
cargo check -p hprof-shrink-core --no-default-features --quiet

step "the core for Android: checked for three targets with and without the C ABI, the phone's library linked and its exports checked"
bash scripts/android-check.sh --build-targets aarch64-linux-android

step "C ABI test (tests/c, against the shared and the static library)"
bash scripts/c-test.sh
