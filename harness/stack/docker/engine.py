"""Finding the Docker engine and the compose CLI v2, with errors that name the fix."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

import docker
from docker.errors import DockerException

from harness.errors import DockerUnavailable

SETUP_HINT = "run `bash scripts/docker-setup.sh` (installs and starts the engine, builds images)"
RUN_LABEL = "n8n-chaos.run"
PROJECT_PREFIX = "n8n-chaos-"


@cache
def client() -> docker.DockerClient:
    try:
        found = docker.from_env(timeout=60)
        found.ping()
    except DockerException as exc:
        raise DockerUnavailable(f"the Docker engine does not answer ({exc}); {SETUP_HINT}") from exc
    return found


def compose_version() -> str:
    """The version of `docker compose` (v2, the CLI plugin), or raise naming the fix."""
    if shutil.which("docker") is None:
        raise DockerUnavailable(f"the docker CLI is missing; {SETUP_HINT}")
    done = subprocess.run(
        ["docker", "compose", "version", "--short"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip().lstrip("v").startswith("2."):
        raise DockerUnavailable(
            "`docker compose` (compose v2) is missing: the deprecated docker-compose v1 is not "
            f"supported; {SETUP_HINT}"
        )
    return done.stdout.strip()


def require_image(image: str) -> None:
    """Raise naming the fix when ``image`` is not in the engine (no registry is assumed)."""
    try:
        client().images.get(image)
    except docker.errors.ImageNotFound as exc:
        raise DockerUnavailable(
            f"image {image!r} is not in the Docker engine; {SETUP_HINT}, "
            f"or `docker pull {image}` where a registry is reachable"
        ) from exc


def project_name(run_id: str) -> str:
    return f"{PROJECT_PREFIX}{run_id}"


def remove_run(run_id: str) -> list[str]:
    """Remove every container, volume and network of the run's compose project, by label
    (what the reaper does when the owner died before ``docker compose down``)."""
    removed: list[str] = []
    api = client()
    by_run: dict[str, str | list[str] | bool] = {"label": f"{RUN_LABEL}={run_id}"}
    by_project = {"label": f"com.docker.compose.project={project_name(run_id)}"}
    for container in api.containers.list(all=True, filters=by_run):
        container.remove(force=True, v=True)
        removed.append(container.name or container.id or "?")
    for volume in api.volumes.list(filters=by_project):
        volume.remove(force=True)
        removed.append(volume.name)
    for network in api.networks.list(filters=by_project):
        network.remove()
        removed.append(network.name or "?")
    return removed
