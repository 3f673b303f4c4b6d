#!/usr/bin/env bash
# The ahat oracle: runs AOSP's ahat on a heap dump and prints (and with --json writes) its
# shallow and retained sizes, retained object counts and paths from a GC root for the
# objects of NAME.leaks.json, or every instance of the classes given. See Oracle.java and
# fixtures/README.md. ahat is not in the repo: point AHAT_SRC at a checkout of AOSP art's
# tools/ahat/src/main (its heapdump, dominators, proguard and progress packages build with
# javac alone).
#   AHAT_SRC=/path/to/art/tools/ahat/src/main scripts/ahat-oracle/oracle.sh DUMP.hprof[.gz] \
#     [--leaks L.json] [--json OUT.json] [CLASS ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${AHAT_SRC:?set AHAT_SRC to the tools/ahat/src/main directory of AOSP art}"
classes=${AHAT_CLASSES:-${TMPDIR:-/tmp}/ahat-oracle-classes}
if [ ! -f "$classes/Oracle.class" ] || [ "$here/Oracle.java" -nt "$classes/Oracle.class" ]; then
  mkdir -p "$classes"
  javac -nowarn -d "$classes" $(find "$AHAT_SRC/com/android/ahat/heapdump" \
    "$AHAT_SRC/com/android/ahat/dominators" "$AHAT_SRC/com/android/ahat/proguard" \
    "$AHAT_SRC/com/android/ahat/progress" -name '*.java') "$here/Oracle.java" 2>&1 \
    | grep -v '^Note:' >&2 || true
fi
exec java -Xmx1g -cp "$classes" Oracle "$@"
