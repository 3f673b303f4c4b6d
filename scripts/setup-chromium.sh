#!/usr/bin/env bash
# Installs Debian's Chromium and its WebDriver (packages chromium, chromium-driver) for the
# browser test of `serve` (tests/serve.rs), when they are missing. Prints chromedriver's
# path on stdout; exits 1 with the reason on stderr when they cannot be installed.
set -euo pipefail

if command -v chromedriver >/dev/null && command -v chromium >/dev/null; then
  command -v chromedriver
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "setup-chromium: no apt-get here: cannot install chromium and chromium-driver" >&2
  exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo)
  else
    echo "setup-chromium: not root and no password-less sudo: cannot run apt-get" >&2
    exit 1
  fi
fi
"${sudo[@]}" apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
  chromium chromium-driver >&2
command -v chromedriver
