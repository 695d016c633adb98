#!/usr/bin/env bash
# Everything a fresh machine needs before the harness runs: Redis from Debian, this package
# with its Python dependencies, then the pinned real parts (Node, n8n, Postgres 17, Toxiproxy,
# mitmproxy in a venv of its own) into the cache. Safe to run again: every step is skipped
# when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "redis-server is missing: run 'sudo apt-get install -y redis-server' and retry" >&2
    exit 1
  fi
  echo "== installing redis-server (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server >/dev/null
fi
# Headless Chromium: the report test opens the single-file report in it (nothing else needs it).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "== installing chromium (apt; for the report's rendering test)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
  else
    echo "note: chromium is missing, so tests/integration/test_report_render.py will skip;" \
      "run 'sudo apt-get install -y chromium' to enable it" >&2
  fi
fi
for tool in npm go; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool is missing: install it first (see README, Requirements)" >&2; exit 1; }
done

echo "== installing n8n-chaos and its Python dependencies (pip)"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[dev]'

echo "== installing the real parts (cached after the first time)"
python3 -m harness install "$@"
