#!/usr/bin/env bash
# Writes the man pages (hprof-shrink.1 and hprof-shrink-COMMAND.1), generated from the
# same clap definitions as --help, into DIR (default target/man).
#   scripts/man.sh ~/.local/share/man/man1
# With HPROF_SHRINK=/path/to/hprof-shrink it uses that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/man}
if [[ -n "${HPROF_SHRINK:-}" ]]; then
  "$HPROF_SHRINK" manpages "$dir"
else
  cargo run --quiet --release -- manpages "$dir"
fi
echo "man pages in $dir: $(cd "$dir" && ls ./*.1 | tr '\n' ' ')"
