#!/usr/bin/env bash
# Installs Debian's Chromium and its WebDriver (packages chromium, chromium-driver) for the
# browser test of `serve` (tests/serve.rs), when they are missing. Prints chromedriver's
# path on stdout; exits 1 with the reason on stderr when they cannot be installed.
set -euo pipefail

if command -v chromedriver >/dev/null && command -v chromium >/dev/null; then
  command -v chromedriver
  exit 0
fi
# shellcheck source=scripts/lib/apt.sh
source "$(dirname "$0")/lib/apt.sh"
apt_install setup-chromium chromium chromium-driver
command -v chromedriver
