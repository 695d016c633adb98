"""The warm runner without n8n: a real ``harness.front.warm.server`` process forks for a client
started from another folder and environment, runs its command in the client's terminal and
hands back its exit code; it refuses a client of another Python; the client hands over only
the runs that would attach, and finds the runner of a live `up` only."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.front.attach import STATE_FILE
from harness.front.warm import client, server
from harness.front.warm.protocol import STATE_KEY, Request
from harness.stack.process import child_setup
from harness.stack.readiness import Readiness, wait_ready

CLIENT = "import sys; from pathlib import Path; from harness.front.warm.client import _run_at; " + (
    "code = _run_at(Path(sys.argv[1]), sys.argv[2:]); sys.exit(99 if code is None else code)"
)


@pytest.fixture(scope="module")
def runner() -> Iterator[tuple[Path, Path]]:
    """A live runner: (its socket, its log)."""
    home = Path(tempfile.mkdtemp(prefix="n8n-chaos-warm-"))
    sock, log_path = home / "runner.sock", home / "runner.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.front.warm.server", str(sock)],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=child_setup(None),  # dies with this pytest, even a SIGKILLed one
        )
    try:

        def serving() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"the runner exited with {proc.returncode}: {log_path.read_text()}")
            return "serving" in log_path.read_text()

        wait_ready(Readiness("the warm runner", serving), deadline_s=60)
        yield sock, log_path
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)


def _client(
    sock: Path, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLIENT, str(sock), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_runner_preloads_without_warnings(runner: tuple[Path, Path]) -> None:
    assert "not preloaded" not in runner[1].read_text()


def test_a_command_prints_to_the_clients_terminal(
    runner: tuple[Path, Path], tmp_path: Path
) -> None:
    done = _client(runner[0], "schema", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "properties" in json.loads(done.stdout)
    assert re.search(r"run \d+: schema in ", runner[1].read_text())


def test_the_run_has_the_clients_folder_environment_and_exit_code(
    runner: tuple[Path, Path], tmp_path: Path
) -> None:
    (tmp_path / "mine" / "w1").mkdir(parents=True)
    (tmp_path / "mine" / "w1" / "workflow.json").write_text("{}")
    env = {**os.environ, "N8N_CHAOS_RUNS": str(tmp_path / "elsewhere")}
    broken = _client(runner[0], "run", "--workflows", "mine", cwd=tmp_path, env=env)
    assert broken.returncode == 2
    assert "w1/manifest.json: file not found" in broken.stderr  # found from the client's cwd
    missing = _client(runner[0], "show", "nope", cwd=tmp_path, env=env)
    assert missing.returncode == 2
    assert f"no case 'nope' under {tmp_path / 'elsewhere'}" in missing.stderr


def test_the_request_carries_the_clients_umask() -> None:
    before = os.umask(0o027)
    try:
        assert Request.of_this_process(["n8n-chaos"]).umask == 0o027
        assert os.umask(0o027) == 0o027  # left as it was
    finally:
        os.umask(before)


def test_another_python_is_refused(
    runner: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", "/opt/another/python3")
    assert client._run_at(runner[0], ["schema"]) is None  # the client then runs it itself
    assert "/opt/another/python3" not in runner[1].read_text()


@pytest.mark.parametrize(
    ("options", "handed_over"),
    [
        (["-k", "case"], True),
        (["--attach", "/runs/x", "-k", "case"], True),
        (["-j", "1"], True),
        (["--no-attach", "-k", "case"], False),
        (["--n8n-no-attach"], False),  # the pytest spelling `run` accepts too
        (["-j", "2"], False),
        (["-j2"], False),
        (["--jobs=3"], False),
        (["-n", "2"], False),
        (["-n", "0"], True),
        (["--backend", "compose"], False),
        (["--backend=compose"], False),
        (["--backend", "native"], True),
        (["--help"], False),
        (["-h"], False),
        (["--workers", "3"], True),  # `run` itself decides (the stack's shape)
    ],
)
def test_only_runs_that_would_attach_are_handed_over(options: list[str], handed_over: bool) -> None:
    assert client._would_attach(options) is handed_over


def test_only_a_live_ups_runner_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("N8N_CHAOS_RUNS", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    owners = (("old", os.getpid(), 1), ("new", os.getpid(), 2), ("dead", dead.pid, 3))
    for name, pid, started in owners:
        (tmp_path / name).mkdir()
        state = {"owner_pid": pid, "started_at": started, STATE_KEY: f"/s/{name}.sock"}
        (tmp_path / name / "attach.json").write_text(json.dumps(state))
    (tmp_path / "latest").symlink_to(tmp_path / "new")
    (tmp_path / "no-runner").mkdir()
    (tmp_path / "no-runner" / "attach.json").write_text(json.dumps({"owner_pid": os.getpid()}))
    assert client._runner_sockets([]) == [Path("/s/new.sock"), Path("/s/old.sock")]
    assert client._runner_sockets(["--attach", str(tmp_path / "old")]) == [Path("/s/old.sock")]
    assert client._runner_sockets([f"--n8n-attach={tmp_path / 'old'}"]) == [Path("/s/old.sock")]
    # Another runs folder (run --runs-dir / --n8n-runs-dir): looked for there.
    assert client._runner_sockets(["--runs-dir", str(tmp_path / "old")]) == []
    assert client._runner_sockets([f"--n8n-runs-dir={tmp_path}"]) == [
        Path("/s/new.sock"),
        Path("/s/old.sock"),
    ]
    assert client.ATTACH_STATE == STATE_FILE  # the client names it without importing attach


def test_no_pytest_plugin_module_is_preloaded() -> None:
    """pytest rewrites the asserts of the plugins it imports; one imported before it cannot
    be rewritten (PytestAssertRewriteWarning in every run)."""
    import harness.front.plugin

    for name in ["harness.front.plugin", *harness.front.plugin.pytest_plugins]:
        assert name.startswith(server.NOT_PRELOADED), name
