# Sourced by the Android scripts: `skip_or_fail WHO REASON` ends a step that cannot run here:
# a skip saying why (exit 0) at a developer's machine, a failure (exit 1) under CI=true,
# where a missing tool must not pass for a green run.
skip_or_fail() {
  local who=$1
  shift
  if [ "${CI:-}" = true ]; then
    echo "$who: cannot run in CI: $*" >&2
    exit 1
  fi
  echo "$who: SKIPPED: $*"
  exit 0
}
