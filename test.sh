#!/usr/bin/env bash
# Run Lily's whole test suite (the README's second command; .ci/run calls it too): the
# lint (ruff) and type (mypy) checks, then pytest. Both checks are configured and their
# versions pinned in pyproject.toml.
# Needs the environment ./setup.sh made. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || { echo "test.sh: run ./setup.sh first" >&2; exit 2; }
.venv/bin/python -m ruff check .
.venv/bin/python -m mypy
exec .venv/bin/python -m pytest "$@"
