#!/usr/bin/env bash
# Regenerates the committed fixtures in fixtures/ (or in the directory given):
#   - hotspot-android.hprof: a HotSpot dump of an Android-shaped heap, from
#     fixtures/java (needs javac/java 17);
#   - hotspot-leaks.hprof.gz: a HotSpot dump of leak scenarios with known answers, from
#     fixtures/java (com.example.LeakHeap), gzip-compressed (`analyze` reads .hprof.gz);
#   - art-*.hprof, synthetic-id8.hprof: ART-format dumps from the Rust builder in
#     fixtures/builder, following ART's runtime/hprof/hprof.cc.
# Each dump gets a NAME.facts.json (what the shrinker's tests check) and/or a
# NAME.leaks.json (the leak analysis ground truth) beside it. The NAME.ahat.json files are
# not made here: see fixtures/README.md.
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
# On the boot class path the scenario classes are sticky-class roots, as app classes are on
# ART. -Xint keeps every local of a waiting frame in the dump's frame roots.
java -Xint -XX:+UseSerialGC -Xmx64m -Xshare:off -Xbootclasspath/a:"$classes" -cp "$classes" \
  com.example.LeakHeap "$classes/hotspot-leaks.hprof"
gzip -9n -c "$classes/hotspot-leaks.hprof" >"$out/hotspot-leaks.hprof.gz"
cp "$classes/hotspot-leaks.leaks.json" "$out/hotspot-leaks.leaks.json"
chmod 644 "$out/hotspot-leaks.hprof.gz" "$out/hotspot-leaks.leaks.json"
echo "$out/hotspot-leaks.hprof.gz ($(stat -c %s "$out/hotspot-leaks.hprof.gz") bytes)"

cargo run --quiet --release -p hprof-fixtures --bin gen-art-fixtures -- "$out"
