"""`n8n-chaos up --backend compose` gives a stack a user can poke by hand; `down` leaves no
container, volume or network of its compose project (asked of the engine, not of us)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import ends_with_the_test, run_down

UP_DEADLINE_S = 900.0


def _wait_for_state(runs: Path, up: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + UP_DEADLINE_S
    while time.monotonic() < deadline:
        if up.poll() is not None:
            pytest.fail(f"`up` exited {up.returncode}:\n{log.read_text()[-3000:]}")
        for state in runs.glob("*/stack.json"):
            loaded: dict[str, Any] = json.loads(state.read_text())
            return loaded
        time.sleep(0.5)
    pytest.fail(f"`up` wrote no stack.json within {UP_DEADLINE_S} s:\n{log.read_text()[-3000:]}")


def _left_over(project: str) -> list[str]:
    from harness.stack.docker.engine import client

    api = client()
    label = {"label": f"com.docker.compose.project={project}"}
    return (
        [f"container {c.name}" for c in api.containers.list(all=True, filters=label)]
        + [f"volume {v.name}" for v in api.volumes.list(filters=label)]
        + [f"network {n.name}" for n in api.networks.list(filters=label)]
    )


def test_up_gives_a_stack_to_poke_and_down_leaves_nothing(
    docker_ready: None, tmp_path: Path
) -> None:
    from harness.stack.docker.engine import client

    runs = tmp_path / "runs"
    env = {**os.environ, "N8N_CHAOS_RUNS": str(runs)}
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        up = subprocess.Popen(
            [
                *(sys.executable, "-m", "harness", "up", "--backend", "compose"),
                *("--workers", "1", "--ready-timeout", "600"),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=ends_with_the_test,
        )
    project = ""
    try:
        state = _wait_for_state(runs, up, log)
        project = state["compose_project"]
        assert state["backend"] == "compose" and project.startswith("n8n-chaos-")
        # What a user does by hand: n8n answers, its public API takes the printed key.
        assert httpx.get(state["n8n_url"] + "/healthz/readiness", timeout=10).status_code == 200
        api = httpx.get(
            state["n8n_url"] + "/api/v1/workflows",
            headers={"X-N8N-API-KEY": state["api_key"]},
            timeout=10,
        )
        assert api.status_code == 200, api.text
        running = client().containers.list(
            filters={"label": f"com.docker.compose.project={project}"}
        )
        parts = {c.labels["n8n-chaos.part"] for c in running}
        assert parts == {"postgres", "redis", "toxiproxy", "provider", "main", "worker0"}
        # The user's own view of the project is the compose CLI's.
        ps = subprocess.run(
            ["docker", "compose", "-p", project, "ps", "--format", "{{.Service}}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert set(ps.stdout.split()) == parts
        down = run_down(env, timeout_s=180)
        assert down.returncode == 0, down.stdout + down.stderr
        assert up.wait(timeout=120) == 0, log.read_text()[-3000:]
    finally:
        if up.poll() is None:
            up.kill()  # its reaper removes the project by label
            up.wait()
    assert project
    assert _left_over(project) == []
