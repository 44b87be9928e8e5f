#!/usr/bin/env bash
# Install this checkout (editable) with the extras in $1 into .venv with uv, reading pip's configuration
# (index-url, extra-index-url, find-links, constraint; files and PIP_* variables alike) so that uv sees the
# same packages pip would. Exits non-zero when uv is missing and cannot be installed, or when it fails:
# scripts/setup.sh then installs with pip.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=$1
uv=$(command -v uv || true)
if [ -z "$uv" ]; then
  [ -x .venv/bin/uv ] || .venv/bin/python -m pip install -q uv 2>&1 | grep -v '^WARNING: Location' || true
  [ -x .venv/bin/uv ] || exit 1
  uv=.venv/bin/uv
fi
args=(--python .venv/bin/python --index-strategy unsafe-best-match --quiet)
# `pip config list` prints `<where>.<key>='<value>'`, lists separated by spaces or newlines
while IFS= read -r line; do
  key=${line%%=*}; key=${key##*.}
  val=${line#*=}; val=${val#\'}; val=${val%\'}
  case "$key" in
    index-url|extra-index-url|find-links|constraint)
      for v in $val; do [[ " ${args[*]} " == *" --$key $v "* ]] || args+=("--$key" "$v"); done ;;
    cert) [ -n "${SSL_CERT_FILE:-}" ] || export SSL_CERT_FILE="$val" ;;  # a proxy's CA: uv reads this
  esac
done < <(.venv/bin/python -m pip config list 2>/dev/null | sort -u)
"$uv" pip install "${args[@]}" -e ".[${extras}]"
