#!/usr/bin/env bash
# Runs every check the project has: formatting, lints, and all tests of the workspace.
# CI runs this same script (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

# The lints themselves are the workspace's ([workspace.lints] in Cargo.toml, clippy.toml):
# every crate inherits them, so an editor's or a developer's own `cargo clippy` sees the
# same set; only `-D warnings` (fail on any) is said here.
step "cargo clippy (all targets, the workspace's lints; warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "cargo clippy with the C ABI (the core's ffi feature)"
cargo clippy --workspace --all-targets --features hprof-shrink-core/ffi --quiet -- -D warnings

step "python environment for the S3 upload test (moto, boto3)"
HPROF_SHRINK_PYTHON=$(bash scripts/setup-python.sh)
export HPROF_SHRINK_PYTHON
echo "$HPROF_SHRINK_PYTHON"

# `optional NAME WHY SCRIPT` runs a setup script and exports its output as $NAME; where it
# fails (apt did not work here), it exports the reason as $WHY instead, and the tests that
# need it skip, saying why, rather than fail.
optional() {
  local name=$1 why=$2 script=$3 out log
  log="target/$(basename "$script" .sh).log"
  mkdir -p target
  if out=$(bash "$script" 2>"$log"); then
    export "$name=$out"
  else
    out="$script failed: $(tail -n 3 "$log" | tr '\n' ' ')"
    export "$why=$out"
  fi
  echo "$out"
}

step "chromium and chromedriver for the browser test of serve"
optional HPROF_SHRINK_CHROMEDRIVER HPROF_SHRINK_NO_CHROMIUM scripts/setup-chromium.sh

step "PostgreSQL for the multi-process test of serve"
optional HPROF_SHRINK_PG_BIN HPROF_SHRINK_NO_POSTGRES scripts/setup-postgres.sh

step "protoc for the Perfetto heap-graph test of analyze (Perfetto's test traces encoded)"
optional HPROF_SHRINK_PROTOC HPROF_SHRINK_NO_PROTOC scripts/setup-protoc.sh

# With the C ABI on, so its tests (shrink/tests/ffi.rs, the header check) run too. On for
# the whole workspace, not only `-p hprof-shrink-core`: the core's library files carry no
# hash in their names (it is also a cdylib), so builds with other features would overwrite
# them and rebuild each other. scripts/c-test.sh takes its libraries from this same build.
step "cargo test (the core with its C ABI: feature ffi)"
cargo test --workspace --features hprof-shrink-core/ffi

# Right after the test build, whose libraries it takes: the core's library files carry no
# hash in their names, so a later build of the core with other features (the package's
# check below) would replace them.
step "C ABI test (tests/c, against the shared and the static library)"
bash scripts/c-test.sh

# Also from the test build (the same command, with the JNI crate's test hooks): only the JNI
# crate is built again.
step "the Java API on the host JVM (android/: the JNI library; the outbox against a real serve)"
bash scripts/java-test.sh

step "the core as Rust callers get it (no C ABI) builds"
cargo check -p hprof-shrink-core --quiet

# `cargo package` builds the core from its .crate as a registry would (offline, from the
# lock file and the cargo cache). Not `cargo publish --dry-run`: that asks the registry's
# index first, which a CI machine without network cannot.
step "the library crates' API documentation builds without a warning (missing docs, broken links)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p hprof-shrink-core -p hprof-shrink-analyze \
  -p hprof-shrink-upload -p hprof-shrink-serve --features hprof-shrink-core/ffi --quiet

# All four library crates in one invocation: cargo packages members that depend on each
# other together (each added to a local registry overlay before the next is verified); one
# alone would look for its sibling on crates.io. Each is built from its .crate with only its
# own features, which catches a feature another member was silently providing. In the
# workspace's target dir, so that the dependencies the tests built are not built again
# (a dir of its own made this step a second full build of the server's stack); it runs
# after the C ABI test, the last step that needs the core's libraries of the test build.
step "the library crates package (core, analyze, upload, serve; cargo package, offline)"
# Cargo unpacks each crate of that overlay into the cargo home's registry sources once and
# keeps it there: a later run on changed code would verify a crate against its sibling's
# old sources. Ours are removed first (only ours: the names are this workspace's).
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/hprof-shrink-{core,analyze,upload,serve}-[0-9]*
cargo package -p hprof-shrink-core -p hprof-shrink-analyze -p hprof-shrink-upload \
  -p hprof-shrink-serve --offline --allow-dirty --quiet

step "the core for Android: checked for three targets with and without the C ABI, the phone's library linked and its exports checked"
bash scripts/android-check.sh --build-targets aarch64-linux-android

# In the same target dir as the step above, so the aarch64 std it rebuilt is reused. One ABI
# in CI (each other ABI rebuilds std and every dependency: minutes each); the release AAR is
# made with all three (scripts/android-jni.sh && scripts/aar.sh, docs/android.md).
step "the JNI library for Android (arm64-v8a): its undefined symbols against Android's, its exports; the AAR assembled and checked"
bash scripts/android-jni.sh --abis arm64-v8a
bash scripts/aar.sh --abis arm64-v8a
