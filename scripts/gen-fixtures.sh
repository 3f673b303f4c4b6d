#!/usr/bin/env bash
# Regenerates the committed fixtures in fixtures/ (or in the directory given):
#   - hotspot-android.hprof: a HotSpot dump of an Android-shaped heap, from
#     fixtures/java (needs javac/java 17);
#   - art-*.hprof, synthetic-id8.hprof: ART-format dumps from the Rust builder in
#     fixtures/builder, following ART's runtime/hprof/hprof.cc.
# Each dump gets a NAME.facts.json beside it saying what the heap holds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/fixtures}
mkdir -p "$out"

classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
javac -d "$classes" $(find "$root/fixtures/java/src" -name '*.java')
# Serial GC and no CDS keep the dump small and its layout simple; -Xmx bounds the heap.
java -XX:+UseSerialGC -Xmx64m -Xshare:off -cp "$classes" fixture.AndroidHeap "$out/hotspot-android.hprof"
chmod 644 "$out/hotspot-android.hprof"
echo "$out/hotspot-android.hprof ($(stat -c %s "$out/hotspot-android.hprof") bytes)"

cargo run --quiet --release -p hprof-fixtures --bin gen-art-fixtures -- "$out"
