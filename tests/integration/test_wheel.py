"""What a user gets from ``pip install``: the wheel built from this tree, installed in a fresh
venv, runs from a folder outside the checkout (bundled workflows found as package data, the
pytest plugin loaded from the wheel) and one real case passes on the real parts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# A case brings a stack up first: about 1 min on a quiet machine, several under load.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

CHECKOUT = Path(__file__).resolve().parents[2]
# The cheapest real case: one delivery, no fault (a stack bring-up plus a few seconds).
CASE = "payment_idempotent-retry-no_fault-none"
_NOT_SHIPPED = shutil.ignore_patterns(
    ".git",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*cache",
    ".n8n-chaos",
    ".venv",
    "tests",
    "bench",
    "allure-*",
)


def _run(
    argv: list[str], cwd: Path, timeout: float, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run a command to its end, in its own session: past the deadline the whole group gets
    SIGTERM (a stack owner tears its stack down on it), then SIGKILL."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**clean, **env},
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            stdout, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
        pytest.fail(f"{argv} still running after {timeout} s\n{stdout[-3000:]}\n{stderr[-3000:]}")
    done = subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
    assert done.returncode == 0, f"{argv} exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel of this tree (deps from the system site-packages)."""
    base = tmp_path_factory.mktemp("wheel")
    # Build from a copy: the build leaves build/ behind, and the shared tree stays untouched.
    source = base / "source"
    shutil.copytree(CHECKOUT, source, ignore=_NOT_SHIPPED)
    wheels = base / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), "."],
        source,
        180,
    )
    (wheel,) = wheels.glob("n8n_chaos-*.whl")
    env = base / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(env)], base, 60)
    _run(
        [str(env / "bin/python"), "-m", "pip", "install", "--no-deps", "-q", str(wheel)], base, 120
    )
    shutil.rmtree(source)  # nothing of the tree is left to import from by accident
    return env


def test_harness_comes_from_the_wheel_and_stays_light(venv: Path, tmp_path: Path) -> None:
    probe = (
        "import json, sys, harness, harness.front.cli, harness.workflow.manifest, "
        "harness.front.plugin\n"
        "bundled = harness.workflow.manifest.BUNDLED_WORKFLOWS\n"
        "print(json.dumps({'harness': harness.__file__,\n"
        "  'bundled': str(bundled),\n"
        "  'typed': (bundled.parent / 'harness' / 'py.typed').is_file(),\n"
        "  'heavy': [m for m in ('fastapi', 'uvicorn', 'sqlite3') if m in sys.modules]}))\n"
    )
    found = json.loads(_run([str(venv / "bin/python"), "-c", probe], tmp_path, 60).stdout)
    assert found["harness"].startswith(str(venv)), found
    assert Path(found["bundled"]).is_relative_to(venv), found
    assert (Path(found["bundled"]) / "payment_idempotent" / "manifest.json").is_file()
    assert found["typed"] and found["heavy"] == []


def test_list_and_schema_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    listed = _run([str(venv / "bin/n8n-chaos"), "list"], tmp_path, 60).stdout
    assert CASE in listed
    schema = json.loads(_run([str(venv / "bin/n8n-chaos"), "schema"], tmp_path, 60).stdout)
    assert "business_key" in schema["properties"]


def test_one_real_case_from_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = _run(
        [str(venv / "bin/n8n-chaos"), "run", "-k", CASE, "--alluredir", str(tmp_path / "allure")],
        tmp_path,
        600,
        N8N_CHAOS_RUNS=str(runs),
    )
    assert "1 passed" in done.stdout, done.stdout
    # The suite pytest ran is the wheel's, not the checkout's.
    assert str(CHECKOUT / "harness") not in done.stdout
    assert any(runs.rglob("*.json")), "the case left no evidence under the runs folder"
