#!/usr/bin/env bash
# The Java API (android/java, package dev.hprofshrink) on the host JVM: builds the JNI library
# (crates/jni) for the host, compiles the API with `javac --release 8` (the bytecode an Android
# app takes) and the tests (android/test, a plain runner: no JUnit needed) with --release 17,
# and runs them against the CLI of this workspace and a real `hprof-shrink serve` the tests
# start on a free port.
#   scripts/java-test.sh [FILTER]      (scripts/test.sh runs it after the C ABI test)
# FILTER runs only the tests whose Class.method contains it.
#
# Needs a JDK (javac 17 or later). Without one it installs Debian's openjdk-17-jdk-headless
# as root; where that cannot be done it says why and skips, except under CI=true, where a
# test that cannot run is a failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
filter=${1:-}

skip() {
  if [ "${CI:-}" = true ]; then
    echo "java-test: cannot run in CI: $*" >&2
    exit 1
  fi
  echo "java-test: SKIPPED: $*"
  exit 0
}
jdk_ok() { command -v javac >/dev/null && javac --release 17 -version >/dev/null 2>&1; }
if ! jdk_ok; then
  [ "$(id -u)" = 0 ] || skip "no javac 17+, and not root to apt-get install openjdk-17-jdk-headless"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      openjdk-17-jdk-headless; } >/dev/null 2>&1 || skip "apt-get install openjdk-17-jdk-headless failed"
  jdk_ok || skip "javac 17+ still missing after installing openjdk-17-jdk-headless"
fi

# The JNI library and the CLI from the build of scripts/test.sh's `cargo test` (same command,
# so nothing but the JNI crate is built again: with test-hooks, its panic on request for the
# test that no panic crosses JNI). The core's C ABI is on in that build, so this host library
# also exports the C functions; the AAR's library (scripts/aar.sh) does not. Cargo's JSON
# messages say where the files are.
artifacts=$(cargo test --workspace --features hprof-shrink-core/ffi,hprof-shrink-jni/test-hooks \
  --no-run --quiet --message-format=json-render-diagnostics | grep '"reason":"compiler-artifact"')
jni=$(grep '"name":"hprof_shrink_jni"' <<<"$artifacts" | grep -o '"[^"]*libhprof_shrink_jni\.so"' |
  tr -d '"' | head -n1)
# The binary itself, not its unit tests' harness (also a "bin" artifact, with "test":true).
cli=$(grep '"kind":\["bin"\]' <<<"$artifacts" | grep '"name":"hprof-shrink"' | grep '"test":false' |
  grep -o '"executable":"[^"]*"' | sed 's/"executable":"//; s/"$//' | head -n1)
[[ -f $jni ]] || { echo "java-test: no libhprof_shrink_jni.so among cargo's artifacts" >&2; exit 1; }
[[ -x $cli ]] || { echo "java-test: no hprof-shrink binary among cargo's artifacts" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/api" "$work/tests"
# -Xlint:all -Werror: what Android's toolchain would warn about fails here. --release 8 also
# proves the API uses no class or method newer than Java 8.
javac --release 8 -Xlint:all -Werror -d "$work/api" android/java/dev/hprofshrink/*.java
javac --release 17 -Xlint:all -Werror -cp "$work/api" -d "$work/tests" android/test/dev/hprofshrink/tests/*.java

args=(dev.hprofshrink.tests.ShrinkTest dev.hprofshrink.tests.OutboxTest)
[ -z "$filter" ] || args+=(-- "$filter")
java -Xcheck:jni -cp "$work/api:$work/tests" \
  -Djava.library.path="$(dirname "$jni")" \
  -Dhprofshrink.cli="$cli" -Dhprofshrink.fixtures="$root/fixtures" -Dhprofshrink.testHooks=true \
  dev.hprofshrink.tests.Runner "${args[@]}"
