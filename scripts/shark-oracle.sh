#!/usr/bin/env bash
# Regenerates fixtures/scenarios/STEM.shark.json and STEM.shark.txt: what LeakCanary's Shark
# 2.14 (../shared/tools/shark, run.sh; build it with its build.sh first) answers on every
# scenario dump (hprof_fixtures::scenarios, fixtures/README.md "Scenarios"), with both of its
# finders (kwr: LeakCanary's KeyedWeakReferenceFinder; filter: the Android inspectors'
# finders over a raw dump) and its own text. Object ids change with every generated dump, so
# they are taken out (and "@123" in labels and key names becomes "@ID"); so are timings,
# the dump's path and hash. Needs a JDK 17+, jq and cargo.
# With AHAT_SRC set (AOSP art's tools/ahat/src/main, see fixtures/README.md), also
# STEM.ahat.json for the size scenarios: what ahat (scripts/ahat-oracle) says of their
# bitmaps' registered native sizes and of their big retainers, ids taken out likewise.
#   scripts/shark-oracle.sh [NAME ...]     (no NAME: every scenario)
#   SHARK_RUN   the oracle's run.sh (default ../shared/tools/shark/run.sh)
#   SCENARIO_CACHE   where the dumps are made (default target/tmp/scenarios)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
run=${SHARK_RUN:-$root/../shared/tools/shark/run.sh}
cache=${SCENARIO_CACHE:-$root/target/tmp/scenarios}
out=$root/fixtures/scenarios
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$root" && cargo run --quiet -p hprof-fixtures --bin gen-scenarios -- "$cache" "$@") >"$tmp/dumps"

normalize='
  def ids: if type == "string" then gsub("@-?[0-9]+"; "@ID") else . end;
  def obj: del(.objectId) | .labels |= map(ids) | .reason |= ids;
  def mode:
    del(.wallMillis, .analysisDurationMillis)
    | .found |= map(del(.objectId))
    | if .leaks then .leaks |= map(
        .traces |= map(
          del(.leakingObjectId)
          | .steps |= map(obj | if .reference then .reference |= (.referenceName |= ids | .displayName |= ids) else . end)))
      else . end
    | if .unreachableObjects then .unreachableObjects |= map(obj) else . end;
  .dump |= {file} | .kwr |= mode | .filter |= mode'

# The objects ahat reports, per scenario dump (classes: every instance of them).
ahat_classes() {
  case $1 in
    bitmap-native) echo android.graphics.Bitmap com.example.app.GalleryActivity ;;
    bitmap-large-api28) echo android.graphics.Bitmap ;;
    oom-cache) echo com.example.app.ThumbnailCache ;;
    accumulation-point) echo com.example.app.EventLog ;;
  esac
}
ahat_normalize='
  del(.sizeConvention)
  | .watchers |= map(del(.referentId))
  | .objects |= (map(del(.objectId) | .path |= map(.object |= gsub("@[0-9a-f]+$"; "@ID")))
                 | sort_by(.class, .retainedNativeBytes, .retainedBytes))'

while IFS=$'\t' read -r name dump; do
  stem=$(basename "$dump" .hprof)
  echo "shark: $stem" >&2
  "$run" "$dump" both --text "$tmp/$stem.txt" >"$tmp/$stem.json"
  jq --arg scenario "$name" "$normalize"' | {scenario: $scenario} + .' "$tmp/$stem.json" >"$out/$stem.shark.json"
  # The text without the oracle's id labels (its filter misses negative ids), timings,
  # the dump's path and the analysis time.
  grep -v -e 'oracle\.objectId=' -e '^Analysis duration: ' -e '^Heap dump file path: ' \
    -e '^Heap dump timestamp: ' "$tmp/$stem.txt" | sed -E 's/@-?[0-9]+/@ID/g' >"$out/$stem.shark.txt"
  classes=$(ahat_classes "$stem")
  if [ -n "${AHAT_SRC:-}" ] && [ -n "$classes" ]; then
    echo "ahat: $stem" >&2
    # shellcheck disable=SC2086 # the class names are words
    "$root/scripts/ahat-oracle/oracle.sh" "$dump" --leaks /dev/null --json "$tmp/$stem.ahat.json" \
      $classes >/dev/null
    jq --arg scenario "$name" "$ahat_normalize"' | {scenario: $scenario} + .' \
      "$tmp/$stem.ahat.json" >"$out/$stem.ahat.json"
  fi
done <"$tmp/dumps"
