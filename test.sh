#!/usr/bin/env bash
# Run Lily's whole test suite (the README's second command; .ci/run calls it too): the
# lint check (ruff), then pytest with the type check (mypy) beside it. Both checks are
# configured and their versions pinned in pyproject.toml.
# Needs the environment ./setup.sh made. Extra arguments go to pytest.
# pytest runs on two workers (pytest-xdist): most slow tests wait on a kernel, a browser
# or a model, so two keep both cores busy; each slow module stays on one worker, the
# slowest sent first (tests/support/parallel.py). LILY_TEST_WORKERS=N changes the count
# (0: no workers, everything in this process).
# The browser tests drive Debian's Chromium (never a downloaded browser): installed
# here with apt when missing and possible; without it they skip and say why (CI fails).
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || { echo "test.sh: run ./setup.sh first" >&2; exit 2; }
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "test.sh: installing Debian's chromium for the browser tests" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
    >/tmp/lily-chromium-install.log 2>&1 \
    || { echo "test.sh: chromium could not be installed:" >&2; tail -5 /tmp/lily-chromium-install.log >&2; }
fi
.venv/bin/python -m ruff check .
# Bytecode is cached for this run even where the environment says not to write it
# (PYTHONDONTWRITEBYTECODE, set on the machines this project is built on): otherwise every kernel
# and CLI process the tests start compiles Lily's modules again, and each pytest process
# rewrites every test module's asserts again.
unset PYTHONDONTWRITEBYTECODE
# mypy runs beside pytest (on a fresh clone its cold cache takes minutes, mostly of one
# core, while most slow tests wait): its report is printed after pytest's, and either
# failing fails the run.
types=$(mktemp)
trap 'rm -f "$types"' EXIT
.venv/bin/python -m mypy >"$types" 2>&1 &
mypy_pid=$!
status=0
.venv/bin/python -m pytest -n "${LILY_TEST_WORKERS:-2}" --dist loadfile \
  --no-loadscope-reorder "$@" || status=$?
types_status=0
wait "$mypy_pid" || types_status=$?
sed 's/^/mypy: /' "$types"
[ "$types_status" = 0 ] || { [ "$status" != 0 ] || status=$types_status; }
exit "$status"
