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
# Skill scripts run inside bubblewrap when the machine has it (no network, files read-only
# but the workspace). Install it where this script may (root with apt, e.g. CI); never
# fatal: without it, scripts run unsandboxed and the approval question says so.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq bubblewrap >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; } \
      || echo "setup.sh: could not install bubblewrap; skill scripts will run unsandboxed." >&2
  else
    echo "setup.sh: bubblewrap (bwrap) is not installed; skill scripts will run unsandboxed" \
         "(install the bubblewrap package to sandbox them)." >&2
  fi
fi
echo "Lily is installed in .venv (kernel: $(.venv/bin/jupyter kernelspec list | grep -c lily) 'lily' kernelspec)."
