#!/usr/bin/env bash
# What the compose backend needs on a fresh Debian machine, every step skipped when done:
#   1. the Docker engine (Debian's docker.io), started if not running (log: <cache>/logs/dockerd.log);
#   2. the compose CLI v2, built from the Go module github.com/docker/compose/v2 and installed
#      as a CLI plugin (`docker compose`);
#   3. local images of the same shape as the pinned ones in compose/compose.yaml, built from a
#      Debian base made by debootstrap and from the parts `n8n-chaos install` put in the cache.
# Images are saved with `docker save` under <cache>/images, keyed by a hash of their inputs, and
# loaded from there when the engine lacks them. Run scripts/setup.sh first (the parts).
set -euo pipefail
cd "$(dirname "$0")/.."

COMPOSE_VERSION=v2.40.3
SUITE=bookworm
CACHE=$(python3 -c 'from harness.stack.install import default_cache_dir; print(default_cache_dir())')
IMAGES="$CACHE/images"
mkdir -p "$IMAGES" "$CACHE/logs"
say() { echo "== docker: $*"; }
need_root() { [ "$(id -u)" -eq 0 ] || { echo "$1 needs root: run this script with sudo" >&2; exit 1; }; }

# -- 1. engine ------------------------------------------------------------------------
if ! command -v dockerd >/dev/null 2>&1; then
  need_root "installing docker.io"
  say "installing docker.io and debootstrap (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io debootstrap >/dev/null
fi
command -v debootstrap >/dev/null 2>&1 || { need_root "installing debootstrap"; apt-get install -y -qq debootstrap >/dev/null; }
if ! docker info >/dev/null 2>&1; then
  need_root "starting dockerd"
  say "starting dockerd (log: $CACHE/logs/dockerd.log)"
  # setsid: the engine outlives this script and the CI step that ran it.
  setsid /usr/sbin/dockerd >>"$CACHE/logs/dockerd.log" 2>&1 </dev/null &
  deadline=$((SECONDS + 60))
  until docker info >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "dockerd did not answer within 60 s; see $CACHE/logs/dockerd.log" >&2
      tail -20 "$CACHE/logs/dockerd.log" >&2
      exit 1
    fi
    sleep 0.5
  done
fi

# -- 2. compose v2 ----------------------------------------------------------------------
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
[ "$(id -u)" -eq 0 ] || PLUGIN_DIR="$HOME/.docker/cli-plugins"
BUILT="$CACHE/compose/$COMPOSE_VERSION/docker-compose"
if ! docker compose version 2>/dev/null | grep -q "${COMPOSE_VERSION}"; then
  if [ ! -x "$BUILT" ]; then
    command -v go >/dev/null 2>&1 || { echo "go is missing: needed to build docker compose $COMPOSE_VERSION" >&2; exit 1; }
    say "building docker compose $COMPOSE_VERSION from the Go module (once, ~3 min)"
    # `go install` refuses a module whose go.mod has exclude directives: build from a copy.
    src=$(go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
    work=$(mktemp -d)
    cp -r "$src" "$work/src" && chmod -R u+w "$work/src"
    mkdir -p "$(dirname "$BUILT")"
    (cd "$work/src" && CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
      -o "$BUILT.tmp" ./cmd) >"$CACHE/logs/compose-build.log" 2>&1 ||
      { tail -20 "$CACHE/logs/compose-build.log" >&2; exit 1; }
    mv "$BUILT.tmp" "$BUILT"
    rm -rf "$work"
  fi
  mkdir -p "$PLUGIN_DIR"
  install -m 0755 "$BUILT" "$PLUGIN_DIR/docker-compose"
fi
say "$(docker compose version)"

# -- 3. images ------------------------------------------------------------------------
# Paths of the cached parts (scripts/setup.sh installed them).
read -r NODE_BIN N8N_BIN PG_BIN TOXI_BIN N8N_VERSION < <(python3 - <<'EOF'
from harness.stack.install import Installer
inst = Installer().installed()
if inst is None:
    raise SystemExit("the real parts are not installed: run `python3 -m harness install` first")
print(inst.node_bin, inst.n8n_bin, inst.postgres_bin_dir, inst.toxiproxy_bin, inst.n8n_version)
EOF
)
NODE_HOME=$(dirname "$(dirname "$NODE_BIN")")
N8N_HOME=$(dirname "$(dirname "$(dirname "$(dirname "$N8N_BIN")")")")
PG_HOME=$(dirname "$PG_BIN")

hash_of() { # the inputs' hash: file contents (small files) and names/versions (big trees)
  { for item in "$@"; do
      if [ -f "$item" ]; then sha256sum "$item" | cut -d' ' -f1; else echo "$item"; fi
    done; } | sha256sum | cut -c1-16
}
label_of() { docker image inspect -f '{{index .Config.Labels "n8n-chaos.inputs"}}' "$1" 2>/dev/null || true; }

# ensure_image TAG HASH BUILD_FUNCTION: present with this hash, else loaded, else built and saved.
ensure_image() {
  local tag=$1 hash=$2 build=$3 tar
  tar="$IMAGES/$(echo "$tag" | tr '/:' '__')-$hash.tar"
  if [ "$(label_of "$tag")" = "$hash" ]; then
    say "$tag present"
    return
  fi
  if [ -s "$tar" ]; then
    say "$tag: loading $tar"
    docker load -q -i "$tar" >/dev/null
    [ "$(label_of "$tag")" = "$hash" ] && return
  fi
  local started=$SECONDS
  say "$tag: building"
  "$build" "$tag" "$hash"
  rm -f "$IMAGES/$(echo "$tag" | tr '/:' '__')"-*.tar
  docker save -o "$tar.tmp" "$tag" && mv "$tar.tmp" "$tar"
  say "$tag: built and saved in $((SECONDS - started)) s"
}

BASE_TAG=n8n-chaos/base:$SUITE
BASE_HASH=$(hash_of "debootstrap --variant=minbase $SUITE v1")
build_base() {
  local root
  root=$(mktemp -d)
  debootstrap --variant=minbase "$SUITE" "$root" http://deb.debian.org/debian \
    >"$CACHE/logs/debootstrap.log" 2>&1 || { tail -20 "$CACHE/logs/debootstrap.log" >&2; exit 1; }
  tar -C "$root" -c . | docker import --change "LABEL n8n-chaos.inputs=$2" \
    --change 'CMD ["bash"]' - "$1" >/dev/null
  rm -rf "$root"
}
ensure_image "$BASE_TAG" "$BASE_HASH" build_base

# docker_build TAG HASH DIR (the legacy builder: Debian's docker.io has no buildx).
CTX=""
trap '[ -z "$CTX" ] || rm -rf "$CTX"' EXIT  # a failed build leaves no context behind
docker_build() {
  docker build -q --network host --build-arg "BASE=$BASE_TAG" --label "n8n-chaos.inputs=$2" \
    -t "$1" "$3" >/dev/null
}
context_from() { # context_from IMAGE_DIR: a fresh context with the image's own files
  CTX=$(mktemp -d)
  cp compose/images/"$1"/* "$CTX"/
}
dir_of() { echo "compose/images/$1"; }

build_n8n() {
  context_from n8n
  cp -al "$NODE_HOME" "$CTX/node" 2>/dev/null || cp -a "$NODE_HOME" "$CTX/node"
  tar -C "$N8N_HOME" -cf "$CTX/n8n-node_modules.tar" node_modules
  docker_build "$1" "$2" "$CTX"; rm -rf "$CTX"
}
build_postgres() {
  context_from postgres
  cp -a "$PG_HOME" "$CTX/native"
  docker_build "$1" "$2" "$CTX"; rm -rf "$CTX"
}
build_redis() { context_from redis; docker_build "$1" "$2" "$CTX"; rm -rf "$CTX"; }
build_toxiproxy() {
  context_from toxiproxy
  cp "$TOXI_BIN" "$CTX/toxiproxy-server"
  docker_build "$1" "$2" "$CTX"; rm -rf "$CTX"
}
build_provider() {
  CTX=$(mktemp -d)
  cp -r fake_providers "$CTX/"
  find "$CTX" -name __pycache__ -prune -exec rm -rf {} +
  cp compose/images/provider/Dockerfile "$CTX/"
  # The versions this package runs with on the host (pip show), as wheels for Python 3.11.
  python3 -m pip download -q --disable-pip-version-check --only-binary=:all: -d "$CTX/wheels" \
    --python-version 3.11 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    $(python3 -m pip list --format=freeze 2>/dev/null | grep -iE '^(fastapi|uvicorn|pydantic|httpx|aiosmtpd|atpublic|attrs)==')
  docker_build "$1" "$2" "$CTX"; rm -rf "$CTX"
}
files_in() { find "$@" -type f -not -path '*/__pycache__/*' | sort; }

ensure_image "n8n-chaos/n8n:$N8N_VERSION-local" \
  "$(hash_of "$BASE_HASH" $(files_in "$(dir_of n8n)") "$N8N_HOME/package-lock.json" "$NODE_HOME")" build_n8n
ensure_image n8n-chaos/postgres:17-local \
  "$(hash_of "$BASE_HASH" $(files_in "$(dir_of postgres)") "$PG_HOME")" build_postgres
ensure_image n8n-chaos/redis:7-local "$(hash_of "$BASE_HASH" $(files_in "$(dir_of redis)"))" build_redis
ensure_image n8n-chaos/toxiproxy:2.12.0-local \
  "$(hash_of "$BASE_HASH" $(files_in "$(dir_of toxiproxy)") "$TOXI_BIN")" build_toxiproxy
ensure_image n8n-chaos/provider:local \
  "$(hash_of "$BASE_HASH" $(files_in "$(dir_of provider)" fake_providers))" build_provider
say "images ready"
