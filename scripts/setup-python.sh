#!/usr/bin/env bash
# Creates (once) the Python environment the tests need: a venv under target/pyenv with the
# packages of tests/s3/requirements.txt (moto's server and boto3 for S3, junitparser).
# Fast when it is already there: the venv is rebuilt only when the requirements change.
# Prints the venv's python on stdout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/target/pyenv"
req="$root/tests/s3/requirements.txt"
stamp="$venv/.requirements"
python=${PYTHON:-python3}

if [[ -x "$venv/bin/python" && -f "$stamp" ]] && cmp -s "$req" "$stamp"; then
  echo "$venv/bin/python"
  exit 0
fi
rm -rf "$venv"
mkdir -p "$root/target"
"$python" -m venv "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
"$venv/bin/python" -c 'import moto.server, boto3, junitparser' >&2
cp "$req" "$stamp"
echo "$venv/bin/python"
