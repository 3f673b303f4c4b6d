#!/usr/bin/env bash
# The core crate (shrink/) for Android, checked with Debian's own Rust toolchain: this
# machine has no NDK and rustup cannot add targets, so ../shared/tools/android-check.sh
# rebuilds std for each Android target (-Zbuild-std) and compiles C code with clang-19
# against stand-in headers. It installs what it needs from apt (about 1 GB, needs root).
#
#   scripts/android-check.sh            check: every target, with and without the C ABI
#   scripts/android-check.sh --build    also link the phone's release library
#                                       (--profile release-android --features ffi) for
#                                       aarch64 and armv7, print its size, and check that it
#                                       exports exactly the functions of the C header
#
# Options: --targets "T ..." (default: aarch64-linux-android armv7-linux-androideabi
# x86_64-linux-android); --build-targets "T ..." builds only those. The target dir is target/android-check, apart from the host build
# (a different rustc would otherwise make the two rebuild each other).
#
# Skips with a printed reason when the tool or root is missing, except under CI=true, where
# a check that cannot run is a failure. What it proves: the code compiles and links for
# Android. What it cannot: that the library runs on a device (the stand-in sysroot has no
# unwinder), which needs the NDK and a phone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

build=0
targets="aarch64-linux-android armv7-linux-androideabi x86_64-linux-android"
build_targets="aarch64-linux-android armv7-linux-androideabi"
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=1; shift ;;
    --targets) targets=$2; build_targets=$2; shift 2 ;;
    --build-targets) build=1; build_targets=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "android-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

tool=${HPROF_SHRINK_ANDROID_CHECK:-$root/../shared/tools/android-check.sh}
# shellcheck source=lib/skip.sh
source "$root/scripts/lib/skip.sh"
skip() { skip_or_fail android-check "$@"; }
[ -f "$tool" ] || skip "no $tool (the shared tools are not beside this checkout)"
if [ "$(id -u)" != 0 ] && ! dpkg-query -W -f='${Status}' rust-web-src 2>/dev/null | grep -q 'ok installed'; then
  skip "not root, and Debian's rustc-web toolchain is not installed"
fi

# The core with and without its C ABI; the host crate is never built for a phone.
bash "$tool" --targets "$targets" shrink --no-default-features
bash "$tool" --targets "$targets" shrink --features ffi

[ $build = 1 ] || exit 0

# The library an app links: its exports are exactly the header's functions.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bash "$tool" --build --targets "$build_targets" shrink --profile release-android --features ffi | tee "$log"
want=$(grep -oE '\bhprof_shrink_[a-z0-9_]+[[:space:]]*\(' shrink/include/hprof_shrink.h |
  tr -d '( \t' | sort -u)
[ -n "$want" ] || { echo "android-check: no functions found in shrink/include/hprof_shrink.h" >&2; exit 1; }
status=0
for t in $build_targets; do
  so=target/android-check/$t/release-android/libhprof_shrink_core.so
  [ -f "$so" ] || { echo "android-check: $so was not built" >&2; exit 1; }
  have=$(llvm-nm-19 -D --defined-only "$so" | awk '{print $NF}' | sort -u)
  if [ "$have" = "$want" ]; then
    echo "android-check: $t: $(stat -c %s "$so") bytes, exports the $(wc -l <<<"$want") functions of the header"
  else
    echo "android-check: $t: exports differ from the header (< header, > library):" >&2
    diff <(echo "$want") <(echo "$have") >&2 || true
    status=1
  fi
done
exit $status
