#!/usr/bin/env bash
# Installs Debian's protobuf-compiler (protoc) for the Perfetto heap-graph test
# (crates/analyze/tests/perfetto.rs), which encodes Perfetto's own text-proto test traces into
# binary ones, when it is missing. Prints protoc's path on stdout; exits 1 with the reason on
# stderr when it cannot be installed. The build never needs protoc: only that test does.
set -euo pipefail

if command -v protoc >/dev/null; then
  command -v protoc
  exit 0
fi
# shellcheck source=scripts/lib/apt.sh
source "$(dirname "$0")/lib/apt.sh"
if ! apt_install setup-protoc protobuf-compiler; then
  echo "setup-protoc: the install reported a failure; looking for protoc anyway" >&2
fi
if ! command -v protoc >/dev/null; then
  echo "setup-protoc: protobuf-compiler installed, but no protoc on PATH" >&2
  exit 1
fi
command -v protoc
