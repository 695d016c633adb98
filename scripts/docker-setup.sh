#!/usr/bin/env bash
# What the compose backend needs on a fresh Debian machine, every step skipped when done:
#   1. the compose CLI v2, built from the Go module github.com/docker/compose/v2 (in the
#      background while the next steps run) and installed as a CLI plugin (`docker compose`);
#   2. the Docker engine (Debian's docker.io), started if not running (log: <cache>/logs/dockerd.log);
#   3. local images of the same shape as the pinned ones in compose/compose.yaml, on a Debian
#      base made by debootstrap; the parts `n8n-chaos install` put in the cache are bind-mounted
#      into the containers or copied into the images (below).
# Run scripts/setup.sh first (the parts), or run `docker-setup.sh --without-parts` beside it
# (steps 1, 2 and the base image: they need nothing setup.sh installs; .ci/run does so), then
# this script again for the images.
set -euo pipefail
cd "$(dirname "$0")/.."
WITHOUT_PARTS=0
case "${1:-}" in
  "") ;;
  --without-parts) WITHOUT_PARTS=1 ;;
  *) echo "error: unknown option '$1': the only option is --without-parts (see the script's head)" >&2
     exit 2 ;;
esac

COMPOSE_VERSION=v2.40.3
SUITE=bookworm
CACHE=$(python3 -c 'from harness.stack.install import default_cache_dir; print(default_cache_dir())')
TOXIPROXY_VERSION=$(python3 -c 'from harness.stack.install import TOXIPROXY_VERSION; print(TOXIPROXY_VERSION)')
IMAGES="$CACHE/images"
mkdir -p "$IMAGES" "$CACHE/logs"
say() { echo "== docker: $*"; }
need_root() { [ "$(id -u)" -eq 0 ] || { echo "$1 needs root: run this script with sudo" >&2; exit 1; }; }

# -- 1. compose v2 (started first: the Go build is the longest step that needs nothing else) ---
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
[ "$(id -u)" -eq 0 ] || PLUGIN_DIR="$HOME/.docker/cli-plugins"
BUILT="$CACHE/compose/$COMPOSE_VERSION/docker-compose"
build_compose() {
  say "building docker compose $COMPOSE_VERSION from the Go module (once, ~3 min, in the background)"
  # `go install` refuses a module whose go.mod has exclude directives: build from a copy.
  local src work
  src=$(go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  work=$(mktemp -d)
  cp -r "$src" "$work/src" && chmod -R u+w "$work/src"
  mkdir -p "$(dirname "$BUILT")"
  (cd "$work/src" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
    -o "$BUILT.tmp" ./cmd) || { rm -rf "$work"; return 1; }
  mv "$BUILT.tmp" "$BUILT"
  rm -rf "$work"
}
COMPOSE_PID=""
WORK=$(mktemp -d)  # the images' build contexts
# On any exit: no context left behind, and no Go build left running on its own.
trap '[ -z "$COMPOSE_PID" ] || wait "$COMPOSE_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
if ! docker compose version 2>/dev/null | grep -q "${COMPOSE_VERSION}" && [ ! -x "$BUILT" ]; then
  command -v go >/dev/null 2>&1 || { echo "go is missing: needed to build docker compose $COMPOSE_VERSION" >&2; exit 1; }
  build_compose >"$CACHE/logs/compose-build.log" 2>&1 &
  COMPOSE_PID=$!
fi

# The compose CLI, once its build finished.
compose_ready() {
  if [ -n "$COMPOSE_PID" ] && ! wait "$COMPOSE_PID"; then
    COMPOSE_PID=""
    echo "building docker compose $COMPOSE_VERSION failed; see $CACHE/logs/compose-build.log" >&2
    tail -20 "$CACHE/logs/compose-build.log" >&2
    exit 1
  fi
  COMPOSE_PID=""
  if ! docker compose version 2>/dev/null | grep -q "${COMPOSE_VERSION}"; then
    mkdir -p "$PLUGIN_DIR"
    install -m 0755 "$BUILT" "$PLUGIN_DIR/docker-compose"
  fi
  say "$(docker compose version)"
}

# -- 2. engine ------------------------------------------------------------------------
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  need_root "installing docker.io and debootstrap"
  say "installing docker.io and debootstrap (apt)"
  # One apt at a time: setup.sh's may run beside this one (.ci/run).
  ( flock 9
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq docker.io debootstrap >/dev/null ) 9>/tmp/n8n-chaos-apt.lock
fi
if ! docker info >/dev/null 2>&1; then
  need_root "starting dockerd"
  # A dockerd killed with its machine's session leaves its pid file behind, and a new one
  # then refuses to start ("pid file found"). A live dockerd that is still starting is
  # waited for instead of doubled.
  pidfile=/var/run/docker.pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then
    say "waiting for the dockerd that is starting (pid $pid)"
  else
    if [ -e "$pidfile" ]; then
      say "removing the stale $pidfile (pid ${pid:-none} is no dockerd)"
      rm -f "$pidfile"
    fi
    say "starting dockerd (log: $CACHE/logs/dockerd.log)"
    # setsid: the engine outlives this script and the CI step that ran it.
    setsid /usr/sbin/dockerd >>"$CACHE/logs/dockerd.log" 2>&1 </dev/null &
  fi
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

# -- 3. images ------------------------------------------------------------------------
# Thin images: nothing of the cache is copied into n8n's. Node and n8n's node_modules (2.8 GB)
# are bind-mounted read-only from the cache when the harness creates the containers
# (harness/stack/docker/project.py), so the n8n image is the base, a user and an entrypoint.
# One debootstrap makes the base with every Debian package the images run (tini,
# ca-certificates, redis-server, python3): no image runs apt. Its root file system is kept as
# a tarball under <cache>/images, keyed by its inputs, so a wiped engine imports it again
# without the network. The images themselves take seconds and are not saved.
# The tags: harness/stack/docker/project.py (LOCAL_IMAGES, LOCAL_N8N_IMAGE) names the same.
BASE_TAG=n8n-chaos/base:$SUITE-thin
BASE_PACKAGES=tini,ca-certificates,redis-server,python3

hash_of() { # the inputs' hash: file contents (small files) and names/versions (big trees)
  { for item in "$@"; do
      if [ -f "$item" ]; then sha256sum "$item" | cut -d' ' -f1; else echo "$item"; fi
    done; } | sha256sum | cut -c1-16
}
label_of() { docker image inspect -f '{{index .Config.Labels "n8n-chaos.inputs"}}' "$1" 2>/dev/null || true; }
files_in() { find "$@" -type f -not -path '*/__pycache__/*' | sort; }

BASE_HASH=$(hash_of "debootstrap --variant=minbase --include=$BASE_PACKAGES $SUITE v2")
if [ "$(label_of "$BASE_TAG")" = "$BASE_HASH" ]; then
  say "$BASE_TAG present"
else
  rootfs="$IMAGES/base-$SUITE-$BASE_HASH.tar"
  if [ ! -s "$rootfs" ]; then
    started=$SECONDS
    say "$BASE_TAG: debootstrap (log: $CACHE/logs/debootstrap.log)"
    root=$(mktemp -d)
    debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$root" \
      http://deb.debian.org/debian >"$CACHE/logs/debootstrap.log" 2>&1 ||
      { rm -rf "$root"; tail -20 "$CACHE/logs/debootstrap.log" >&2; exit 1; }
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    rm -f "$IMAGES"/base-"$SUITE"-*.tar
    tar -C "$root" -cf "$rootfs.tmp" . && mv "$rootfs.tmp" "$rootfs"
    rm -rf "$root"
    say "$BASE_TAG: root file system made in $((SECONDS - started)) s"
  fi
  docker import --change "LABEL n8n-chaos.inputs=$BASE_HASH" --change 'CMD ["bash"]' \
    "$rootfs" "$BASE_TAG" >/dev/null
  say "$BASE_TAG imported from $rootfs"
fi

if [ "$WITHOUT_PARTS" -eq 1 ]; then
  compose_ready
  say "engine, compose CLI and base image ready; run this script again for the images"
  exit 0
fi
# Paths of the cached parts (scripts/setup.sh installed them).
read -r PG_BIN TOXI_BIN < <(python3 - <<'PY'
from harness.stack.install import Installer
inst = Installer().installed()
if inst is None:
    raise SystemExit("the real parts are not installed: run `bash scripts/setup.sh` first")
print(inst.postgres_bin_dir, inst.toxiproxy_bin)
PY
)
PG_HOME=$(dirname "$PG_BIN")

# Each image is built in a context of its own, side by side (the legacy builder: Debian's
# docker.io has no buildx); every build's output goes to <cache>/logs/image-<name>.log.
context_n8n() { :; }
context_postgres() { cp -a "$PG_HOME" "$1/native"; }
context_redis() { :; }
context_toxiproxy() { cp "$TOXI_BIN" "$1/toxiproxy-server"; }
# The provider's dependencies at the versions this package runs with on the host.
PROVIDER_PINS=$(python3 -m pip list --format=freeze 2>/dev/null |
  grep -iE '^(fastapi|uvicorn|pydantic|httpx|aiosmtpd|atpublic|attrs)==' | tr '\n' ' ')
context_provider() {
  cp -r fake_providers "$1/"
  find "$1" -name __pycache__ -prune -exec rm -rf {} +
  # Installed by the host's pip for Debian's Python 3.11 into site/ (copied into the image's
  # dist-packages): the image needs no pip, no index, no certificates.
  # shellcheck disable=SC2086  # one word per pin
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --target "$1/site" --only-binary=:all: --python-version 3.11 --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 $PROVIDER_PINS
  rm -rf "$1/site/bin"
}
build_image() { # build_image NAME TAG HASH: ensure TAG carries HASH, else build it
  local name=$1 tag=$2 hash=$3 ctx="$WORK/$1" started=$SECONDS
  if [ "$(label_of "$tag")" = "$hash" ]; then
    say "$tag present"
    return
  fi
  mkdir -p "$ctx" && cp compose/images/"$name"/* "$ctx"/
  "context_$name" "$ctx"
  docker build -q --network host --build-arg "BASE=$BASE_TAG" --label "n8n-chaos.inputs=$hash" \
    -t "$tag" "$ctx" >"$CACHE/logs/image-$name.log" 2>&1 ||
    { echo "building $tag failed: see $CACHE/logs/image-$name.log" >&2; tail -20 "$CACHE/logs/image-$name.log" >&2; return 1; }
  rm -rf "$ctx"
  say "$tag built in $((SECONDS - started)) s"
}
images_hash() { hash_of "$BASE_HASH" $(files_in "compose/images/$1") "${@:2}"; }
pids=()
build_image n8n n8n-chaos/n8n:thin "$(images_hash n8n)" & pids+=($!)
build_image postgres n8n-chaos/postgres:17-thin "$(images_hash postgres "$PG_HOME")" & pids+=($!)
build_image redis n8n-chaos/redis:7-thin "$(images_hash redis)" & pids+=($!)
build_image toxiproxy n8n-chaos/toxiproxy:$TOXIPROXY_VERSION-thin \
  "$(images_hash toxiproxy "$TOXI_BIN")" & pids+=($!)
build_image provider n8n-chaos/provider:thin \
  "$(images_hash provider "$PROVIDER_PINS" $(files_in fake_providers))" & pids+=($!)
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" -eq 0 ] || exit 1

compose_ready
say "images ready"
