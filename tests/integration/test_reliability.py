"""The harness's own reliability on the real parts: an owner SIGKILLed during bring-up leaves
nothing behind (checked by pid and by port), and inputs that can only be refused with the
parts installed (a taken port, a stack that never gets ready) end in one line naming the
fix, exit 2, nothing left running."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.stack.readiness import Readiness, wait_ready
from harness.stack.reaper import tagged_pids
from tests.support.processes import alive, ends_with_the_test

pytestmark = pytest.mark.integration


def listening_ports(pids: list[int]) -> set[int]:
    """TCP ports in LISTEN state whose socket one of the pids holds."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def port_holders(port: int) -> list[int]:
    """Pids holding a listening socket on the port (those whose fds we may read)."""
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    return [pid for pid in pids if port in listening_ports([pid])]


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def up(runs: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "up", "--workers", "1", *args],
        env={**os.environ, "N8N_CHAOS_RUNS": str(runs)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ends_with_the_test,
    )


def the_run(runs: Path) -> Path | None:
    found = [p for p in runs.glob("*") if p.is_dir() and not p.is_symlink()]
    return found[0] if found else None


@pytest.mark.parametrize("when", ["backing services starting", "n8n starting"])
def test_sigkill_of_the_owner_during_bring_up_leaves_nothing(tmp_path: Path, when: str) -> None:
    owner = up(tmp_path)
    log = "postgres.log" if when == "backing services starting" else "main.log"
    try:

        def reached() -> bool:
            if owner.poll() is not None:
                pytest.fail(f"`up` ended early ({owner.returncode}): {owner.stderr}")
            run = the_run(tmp_path)
            return run is not None and (run / "logs" / log).exists()

        wait_ready(Readiness(f"bring-up reached {log}", reached), deadline_s=240, interval_s=0.05)
        time.sleep(0.5)  # let the part just started open its ports
        run = the_run(tmp_path)
        assert run is not None
        run_id = run.name
        pids = tagged_pids(run_id)
        ports = listening_ports(pids)
        assert pids, "nothing of the run was running yet"
    finally:
        owner.kill()
        owner.wait()
    wait_ready(
        Readiness("the reaper swept the run", lambda: not tagged_pids(run_id)), deadline_s=30
    )
    # A killed process leaves /proc's environ before it is gone: wait for the pids too.
    wait_ready(Readiness("no pid alive", lambda: not any(alive(p) for p in pids)), 15)
    # A port of the run may be reused at once by anyone else: only its holder tells.
    assert [p for p in ports if port_open(p) and set(port_holders(p)) & set(pids)] == []

    def data_removed() -> bool:
        return not run_data_dirs(run_id)

    wait_ready(Readiness("the reaper removed the run's Postgres data", data_removed), 30)


def run_data_dirs(run_id: str) -> list[Path]:
    """The run's Postgres data dirs left in the temp dir."""
    return list(Path(tempfile.gettempdir()).glob(f"n8n-chaos-pg-{run_id}-*"))


def assert_one_line_refusal(done: subprocess.CompletedProcess[str], fix: str) -> None:
    """Exit 2 and one `error:` line naming the fix (after the install's progress lines; a
    log tail may follow it)."""
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert done.returncode == 2, done.stderr
    assert len(errors) == 1 and fix in errors[0], done.stderr


def test_a_taken_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "harness", "up", "--port", str(port)],
            env={**os.environ, "N8N_CHAOS_RUNS": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert_one_line_refusal(done, "already in use")
    assert done.stderr.strip().splitlines()[-1].startswith("error: ")  # nothing after it
    assert the_run(tmp_path) is None


def test_a_stack_that_never_gets_ready_is_ended(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "up", "--workers", "1", "--ready-timeout", "0.01"],
        env={**os.environ, "N8N_CHAOS_RUNS": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    # The first line is the error and its fix; the log tail of the late part follows.
    assert_one_line_refusal(done, "raise the deadline (--ready-timeout")
    run = the_run(tmp_path)
    assert run is not None
    assert tagged_pids(run.name) == []
    assert run_data_dirs(run.name) == []  # its logs are in the run dir; /tmp keeps nothing
