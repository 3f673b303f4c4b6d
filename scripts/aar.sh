#!/usr/bin/env bash
# Assembles the Android library an app depends on, without Gradle:
#   target/aar/hprof-shrink-VERSION.aar           classes.jar (the Java API, Java 8 bytecode),
#                                                 jni/<abi>/libhprof_shrink_jni.so,
#                                                 AndroidManifest.xml (minSdk 21), proguard.txt,
#                                                 R.txt (empty)
#   target/aar/maven/dev/hprofshrink/hprof-shrink/VERSION/   the same with a .pom: a local
#                                                 Maven repository (docs/android.md)
# then checks it: the layout, each .so an ELF of its ABI's machine, and that a consumer class
# (android/consumer) compiles against its classes.jar.
#
#   scripts/aar.sh [--abis "arm64-v8a armeabi-v7a x86_64"]
#
# The .so files come from scripts/android-jni.sh (run first; it checks their symbols). An ABI
# whose library is missing skips the script, saying so (fails it under CI=true).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

abis="arm64-v8a armeabi-v7a x86_64"
while [ $# -gt 0 ]; do
  case $1 in
    --abis) abis=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "aar: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
[ -n "$version" ] || { echo "aar: no version in Cargo.toml" >&2; exit 1; }
out=target/aar
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/classes" "$work/aar"

javac --release 8 -Xlint:all -Werror -d "$work/classes" android/java/dev/hprofshrink/*.java
(cd "$work/classes" && jar --create --file "$work/aar/classes.jar" --date=2026-01-01T00:00:00Z .)
cp android/AndroidManifest.xml android/proguard.txt "$work/aar/"
: > "$work/aar/R.txt"
for abi in $abis; do
  case $abi in
    arm64-v8a) triple=aarch64-linux-android machine=AArch64 ;;
    armeabi-v7a) triple=armv7-linux-androideabi machine=ARM ;;
    x86_64) triple=x86_64-linux-android machine=X86-64 ;;
    *) echo "aar: unknown ABI $abi" >&2; exit 2 ;;
  esac
  so=target/android-check/$triple/release-android/libhprof_shrink_jni.so
  if [ ! -f "$so" ]; then
    # Where scripts/android-jni.sh skipped (no shared tools, not root), so does this.
    [ "${CI:-}" != true ] || { echo "aar: no $so: run scripts/android-jni.sh first" >&2; exit 1; }
    echo "aar: SKIPPED: no $so (scripts/android-jni.sh makes it)"
    exit 0
  fi
  # The ELF header read whole first: grep -q closing the pipe early would fail it (pipefail).
  header=$(llvm-readelf-19 -h "$so")
  grep -qE "Machine:.*[[:space:]]$machine\$" <<<"$header" ||
    { echo "aar: $so is not an $machine library" >&2; exit 1; }
  mkdir -p "$work/aar/jni/$abi"
  cp "$so" "$work/aar/jni/$abi/"
done

aar=$out/hprof-shrink-$version.aar
rm -f "$aar"
# Fixed entry times, so the same inputs make the same AAR.
python3 - "$work/aar" "$aar" <<'PY'
import os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
    for base, dirs, files in sorted(os.walk(src)):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(base, f)
            info = zipfile.ZipInfo(os.path.relpath(path, src), (2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, open(path, "rb").read())
PY

# The check: the layout an AAR must have, then a consumer compiled against classes.jar.
listing=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$aar")
for entry in AndroidManifest.xml classes.jar proguard.txt R.txt $(for abi in $abis; do echo "jni/$abi/libhprof_shrink_jni.so"; done); do
  grep -qxF "$entry" <<<"$listing" || { echo "aar: $aar has no $entry" >&2; exit 1; }
done
extra=$(grep -vxE 'AndroidManifest.xml|classes.jar|proguard.txt|R.txt|jni/[a-z0-9_-]+/libhprof_shrink_jni.so' <<<"$listing" || true)
[ -z "$extra" ] || { echo "aar: unexpected entries in $aar: $extra" >&2; exit 1; }
grep -q 'android:minSdkVersion="21"' android/AndroidManifest.xml || { echo "aar: the manifest states no minSdk 21" >&2; exit 1; }
mkdir "$work/consumer"
javac --release 8 -Xlint:all -Werror -cp "$work/aar/classes.jar" -d "$work/consumer" android/consumer/*.java

repo=$out/maven/dev/hprofshrink/hprof-shrink/$version
mkdir -p "$repo"
cp "$aar" "$repo/"
cat > "$repo/hprof-shrink-$version.pom" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.hprofshrink</groupId>
  <artifactId>hprof-shrink</artifactId>
  <version>$version</version>
  <packaging>aar</packaging>
</project>
POM
echo "aar: $aar ($(stat -c %s "$aar") bytes): $(tr '\n' ' ' <<<"$listing")"
echo "aar: a consumer compiles against its classes.jar; local Maven repository in $out/maven"
