#!/usr/bin/env bash
# The C ABI from C: takes the core library (cdylib and staticlib, debug), compiles
# tests/c/shrink_test.c against the committed header with warnings as errors, and runs it
# linked once against the shared library and once against the static one.
#   scripts/c-test.sh            (scripts/test.sh runs it after cargo test)
# CC picks the compiler (default gcc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cc=${CC:-gcc}

# The libraries `cargo test --workspace --features hprof-shrink-core/ffi` builds (the C ABI
# is the core's ffi feature; nothing to do right after scripts/test.sh ran that). Not a
# separate `cargo build -p hprof-shrink-core`: that resolves dependency features
# differently, and since a cdylib's file name carries no hash the two builds would keep
# replacing each other's library and rebuilding the core and the CLI. Cargo's JSON
# messages say where the files are.
artifacts=$(cargo test --workspace --features hprof-shrink-core/ffi --no-run --quiet \
  --message-format=json-render-diagnostics |
  grep '"reason":"compiler-artifact"' | grep '"name":"hprof_shrink_core"' |
  grep -o '"filenames":\[[^]]*\]' | tr ',' '\n' | tr -d '"[]' | sed 's/^filenames://')
shared=$(grep '\.so$' <<<"$artifacts" | head -n1)
static=$(grep '\.a$' <<<"$artifacts" | head -n1)
[[ -f $shared && -f $static ]] || {
  echo "c-test: no libhprof_shrink_core .so and .a among cargo's artifacts: $artifacts" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cflags=(-Wall -Wextra -Werror -std=c11 -pthread -I"$root/shrink/include")

"$cc" "${cflags[@]}" tests/c/shrink_test.c -o "$work/shrink_test_shared" \
  -L"$(dirname "$shared")" -lhprof_shrink_core -Wl,-rpath,"$(dirname "$shared")"
# Rust's standard library in the archive needs these from the C library.
"$cc" "${cflags[@]}" tests/c/shrink_test.c -o "$work/shrink_test_static" \
  "$static" -lpthread -ldl -lm
# The shared test really loads the shared library (not a copy linked in statically). ldd's
# output is read whole first: `ldd | grep -q` fails at random under pipefail, when grep
# exits at its match and ldd is killed by SIGPIPE writing the lines after it.
loads=$(ldd "$work/shrink_test_shared")
grep -q "libhprof_shrink_core.so => $shared" <<<"$loads" || {
  echo "c-test: shrink_test_shared does not load $shared" >&2
  exit 1
}

for kind in shared static; do
  echo "-- shrink_test linked against the $kind library"
  mkdir "$work/$kind"
  "$work/shrink_test_$kind" "$root/fixtures" "$work/$kind"
done
