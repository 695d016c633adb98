#!/usr/bin/env bash
# Everything a fresh machine needs before the harness runs: Redis (and Chromium) from Debian
# beside this package with its Python dependencies, then the pinned real parts (Node, n8n,
# Postgres 17, Toxiproxy, mitmproxy in a venv of its own) into the cache, side by side. Safe
# to run again: every step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's packages, in one apt run beside pip's install below: redis-server, and headless
# Chromium (the report test opens the single-file report in it; nothing else needs it).
packages=()
command -v redis-server >/dev/null 2>&1 || packages+=(redis-server)
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
APT_PID=""
if [ "${#packages[@]}" -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "== installing ${packages[*]} (apt, in the background; log: /tmp/n8n-chaos-apt.log)"
    # One apt at a time: docker-setup.sh's may run beside this one (.ci/run).
    ( flock 9
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq && apt-get install -y -qq "${packages[@]}" ) 9>/tmp/n8n-chaos-apt.lock \
      >/tmp/n8n-chaos-apt.log 2>&1 &
    APT_PID=$!
  elif [[ " ${packages[*]} " == *" redis-server "* ]]; then
    echo "redis-server is missing: run 'sudo apt-get install -y redis-server' and retry" >&2
    exit 1
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

if [ -n "$APT_PID" ] && ! wait "$APT_PID"; then
  echo "apt-get install ${packages[*]} failed:" >&2
  tail -20 /tmp/n8n-chaos-apt.log >&2
  exit 1
fi
echo "== installing the real parts (cached after the first time; side by side)"
python3 -m harness install "$@"
