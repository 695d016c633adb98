"""The provider started by hand with `--port` alone, and the package's light import."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from fake_providers.payment.config import READY_PREFIX

from .conftest import READY_TIMEOUT_S

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _temp_dir_per_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider's own ledger folder (``mkdtemp``) lands in the test's tmp, not /tmp."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))


def _free_port_pair() -> int:
    """A port P whose P+1 is also free right now (the provider's default control port)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port >= 65535:
            continue
        with socket.socket() as second:
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise AssertionError("no free port pair on 127.0.0.1")


def _start(argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fake_providers.payment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _ready_and_summary(process: subprocess.Popen[str]) -> tuple[dict[str, int], str]:
    """The READY document (stdout) and the summary line (stderr), read with a deadline."""
    assert process.stdout is not None and process.stderr is not None
    with ThreadPoolExecutor(2) as pool:
        out = pool.submit(process.stdout.readline)
        err = pool.submit(process.stderr.readline)
        try:
            line, summary = out.result(READY_TIMEOUT_S), err.result(READY_TIMEOUT_S)
        except TimeoutError:
            process.kill()  # unblocks the readers, so the pool can close
            raise
    assert line.startswith(READY_PREFIX), (line, summary)
    return json.loads(line[len(READY_PREFIX) :]), summary


def test_port_alone_picks_control_port_and_ledger_and_says_where() -> None:
    port = _free_port_pair()
    process = _start(["--port", str(port)])
    try:
        ready, summary = _ready_and_summary(process)
        assert ready["port"] == port
        assert ready["control_port"] == port + 1
        assert f"http://127.0.0.1:{port}" in summary
        assert f"control http://127.0.0.1:{port + 1}" in summary
        ledger = Path(summary.split("ledger ", 1)[1].split(" (", 1)[0])
        assert ledger.name == "ledger.db" and ledger.exists()
        assert ledger.is_relative_to(os.environ["TMPDIR"])
        health = httpx.get(f"http://127.0.0.1:{port + 1}/_control/health", timeout=5)
        assert health.status_code == 200
    finally:
        process.terminate()
        assert process.wait(timeout=15) == 0


def test_taken_control_port_falls_back_to_a_free_one() -> None:
    port = _free_port_pair()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port + 1))
        taken.listen(1)
        process = _start(["--port", str(port)])
        try:
            ready, summary = _ready_and_summary(process)
            assert ready["port"] == port
            assert ready["control_port"] not in (0, port, port + 1)
            assert f"control http://127.0.0.1:{ready['control_port']}" in summary
        finally:
            process.terminate()
            assert process.wait(timeout=15) == 0


def test_importing_the_harness_leaves_the_server_stack_unloaded() -> None:
    probe = (
        "import sys, json\n"
        "import harness.workflow.manifest, harness.front.cli, harness.front.plugin, "
        "fake_providers.payment\n"
        "heavy = ('fastapi', 'uvicorn', 'starlette', 'sqlite3', '_sqlite3',\n"
        "         'fake_providers.payment.app', 'fake_providers.payment.server')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(result.stdout) == []


def test_the_server_names_still_load_on_demand() -> None:
    import fake_providers.payment as payment

    assert callable(payment.create_app)
    assert payment.ProviderApp.__name__ == "ProviderApp"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = payment.nope  # type: ignore[attr-defined]
