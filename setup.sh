#!/usr/bin/env bash
# Set up Lily on a fresh machine: a virtualenv in .venv with Lily (editable), its
# kernelspec (installed into .venv by the wheel's data files) and the test tools.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "Lily needs Python >= 3.11 (set PYTHON=...)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test]"
# The last line says what is ready, or why not (a wheel without its kernelspec data).
if .venv/bin/jupyter kernelspec list --json | .venv/bin/python -c \
    'import json, sys; sys.exit("lily" not in json.load(sys.stdin)["kernelspecs"])'; then
  echo "Lily is ready: .venv has Lily, its test tools and the Lily kernel for Jupyter."
else
  echo "setup.sh: Lily is installed in .venv but Jupyter there does not list the Lily kernel." >&2
  exit 1
fi
