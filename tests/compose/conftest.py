"""The compose tests need a Docker engine, compose v2 and the local images
(`bash scripts/docker-setup.sh`). Without them they skip with the reason, except in CI
(CI=true), where a missing engine is a failure: CI's setup must have provided it."""

from __future__ import annotations

import os

import pytest

from harness.errors import HarnessError


@pytest.fixture(scope="session")
def docker_ready() -> None:
    try:
        from harness.stack.docker.engine import client, compose_version, require_image
        from harness.stack.docker.project import LOCAL_IMAGES, LOCAL_N8N_IMAGE

        client()
        compose_version()
        for image in (*LOCAL_IMAGES.values(), LOCAL_N8N_IMAGE):
            require_image(image)
    except (HarnessError, ImportError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must provide Docker for the compose tests: {exc}")
        pytest.skip(f"compose backend unavailable: {exc}")
