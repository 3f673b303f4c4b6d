#!/usr/bin/env bash
# The JNI library (crates/jni) for Android, without the NDK: builds libhprof_shrink_jni.so
# (--profile release-android) for each ABI with ../shared/tools/android-check.sh, links a real
# unwinder into it, and checks that a device could load it:
#   - no undefined symbol outside android/symbols/<abi>.txt (what Android's libc, libm, libdl
#     and liblog export to apps at API 21, the AAR's minSdk; weak references may stay
#     undefined: they resolve to null where absent);
#   - no _Unwind_* undefined (the unwinder is inside), and __pthread_key_create defined (see
#     crates/jni/android/gthr_active.c);
#   - exports exactly the JNI entry points of dev.hprofshrink.Job.
# Prints each .so's size; the files stay in target/android-check/<triple>/release-android/.
#
#   scripts/android-jni.sh [--abis "arm64-v8a armeabi-v7a x86_64"]
#
# The unwinder: GCC 11's libgcc_eh.a from Debian's cross packages (libgcc-11-dev-*-cross),
# installed here as root if missing. The stand-in sysroot's libunwind.a is empty, and
# panic=abort would let a bug in the library take the app down instead of becoming an
# exception at the JNI boundary (docs/android.md, "The unwinder"). GCC 11, not 12: 12's
# unwinder calls glibc's _dl_find_object, which bionic lacks. A build with the NDK links the
# NDK's libunwind instead and needs none of this.
#
# Skips with a printed reason when the tool or root is missing, except under CI=true.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

abis="arm64-v8a armeabi-v7a x86_64"
while [ $# -gt 0 ]; do
  case $1 in
    --abis) abis=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "android-jni: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

tool=${HPROF_SHRINK_ANDROID_CHECK:-$root/../shared/tools/android-check.sh}
# shellcheck source=lib/skip.sh
source "$root/scripts/lib/skip.sh"
skip() { skip_or_fail android-jni "$@"; }
[ -f "$tool" ] || skip "no $tool (the shared tools are not beside this checkout)"

# abi : rust triple : Debian cross triple of the unwinder : its package suffix
spec() {
  case $1 in
    arm64-v8a) echo "aarch64-linux-android aarch64-linux-gnu arm64" ;;
    armeabi-v7a) echo "armv7-linux-androideabi arm-linux-gnueabi armel" ;;
    x86_64) echo "x86_64-linux-android x86_64-linux-gnu amd64" ;;
    *) echo "android-jni: unknown ABI $1" >&2; exit 2 ;;
  esac
}

missing=""
for abi in $abis; do
  read -r _ gnu pkg <<<"$(spec "$abi")"
  [ -f "/usr/lib/gcc-cross/$gnu/11/libgcc_eh.a" ] || missing="$missing libgcc-11-dev-$pkg-cross"
done
if [ -n "$missing" ]; then
  [ "$(id -u)" = 0 ] || skip "not root, and the unwinders are not installed:$missing"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends $missing; } >/dev/null 2>&1 || skip "apt-get install$missing failed"
fi

want_exports=$(grep -oE 'native [A-Za-z.]+ native[A-Za-z]+\(' android/java/dev/hprofshrink/Job.java |
  sed -E 's/.* (native[A-Za-z]+)\(/Java_dev_hprofshrink_Job_\1/' | sort -u)
[ -n "$want_exports" ] || { echo "android-jni: no native methods found in Job.java" >&2; exit 1; }

status=0
for abi in $abis; do
  read -r triple gnu _ <<<"$(spec "$abi")"
  HPROF_SHRINK_ANDROID_UNWINDER=/usr/lib/gcc-cross/$gnu/11/libgcc_eh.a \
    bash "$tool" --build --targets "$triple" crates/jni --profile release-android
  so=target/android-check/$triple/release-android/libhprof_shrink_jni.so
  [ -f "$so" ] || { echo "android-jni: $so was not built" >&2; exit 1; }
  allowed=android/symbols/$abi.txt
  # Read whole first: a grep -q closing the pipe early would fail the pipeline (pipefail).
  dynamic_undefined=$(llvm-nm-19 -D --undefined-only "$so")
  # Strong undefined symbols (U); weak ones (w, v) resolve to null where absent.
  undefined=$(awk '$1 == "U" { print $2 }' <<<"$dynamic_undefined" | sed 's/@.*//' | sort -u)
  outside=$(comm -23 <(echo "$undefined") <(grep -v '^#' "$allowed" | sort -u))
  unwind=$(grep -c ' _Unwind_' <<<"$dynamic_undefined" || true)
  exports=$(llvm-nm-19 -D --defined-only "$so" | awk '{print $NF}' | sort -u)
  echo "android-jni: $abi: $(stat -c %s "$so") bytes, $(wc -l <<<"$undefined") undefined symbols, NEEDED: $(llvm-readelf-19 -d "$so" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
  if [ -n "$outside" ]; then
    echo "android-jni: $abi: undefined symbols Android does not export at API 21 (not in $allowed):" >&2
    echo "$outside" | sed 's/^/    /' >&2
    status=1
  fi
  # The unwinder's "threads in use?" test (crates/jni/android/gthr_active.c).
  if grep -q ' __pthread_key_create$' <<<"$dynamic_undefined"; then
    echo "android-jni: $abi: __pthread_key_create is undefined: the unwinder would take the process for single-threaded" >&2
    status=1
  fi
  if [ "$unwind" != 0 ]; then
    echo "android-jni: $abi: $unwind _Unwind_* symbols undefined: the unwinder was not linked" >&2
    status=1
  fi
  if [ "$exports" != "$want_exports" ]; then
    echo "android-jni: $abi: exports differ from Job.java's native methods (< Java, > library):" >&2
    diff <(echo "$want_exports") <(echo "$exports") >&2 || true
    status=1
  fi
done
exit $status
