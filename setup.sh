#!/usr/bin/env bash
# Set up Lily on a fresh machine: a virtualenv in .venv with Lily (editable), its
# kernelspec (installed into .venv by the wheel's data files), JupyterLab + Notebook 7
# (the lab extra) and the test tools.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "Lily needs Python >= 3.11 (set PYTHON=...)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[lab,test]"
echo "Lily is installed in .venv (kernel: $(.venv/bin/jupyter kernelspec list | grep -c lily) 'lily' kernelspec)."
