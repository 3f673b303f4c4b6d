#!/usr/bin/env bash
# Installs Debian's PostgreSQL server (package postgresql) for the multi-process test of
# `serve` (tests/serve_cluster.rs), when it is missing. Prints the directory holding
# initdb, pg_ctl and postgres on stdout; exits 1 with the reason on stderr when it cannot
# be installed. The test makes its own throwaway cluster: nothing here starts a server.
set -euo pipefail

find_bin() {
  local d
  # The newest major version installed.
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

if find_bin; then
  exit 0
fi
# shellcheck source=scripts/lib/apt.sh
source "$(dirname "$0")/lib/apt.sh"
# Debian's package starts a cluster of its own where it can; the test does not use it, so
# a machine without an init system failing that start is no reason to give up: what
# counts is whether the programs are there.
if ! apt_install setup-postgres postgresql; then
  echo "setup-postgres: the install reported a failure; looking for the programs anyway" >&2
fi
if ! find_bin; then
  echo "setup-postgres: postgresql installed, but no initdb under /usr/lib/postgresql/*/bin" >&2
  exit 1
fi
