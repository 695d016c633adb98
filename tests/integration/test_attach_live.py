"""At a desk: `n8n-chaos up` in one process, one case attached to it from another, the warm
stack still whole afterwards (a worker the case killed was restarted by `up`), a second
attached run refused while one holds the stack, and `down` ending every process of the run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from harness.front.attach import STATE_FILE, AttachError, attach, live_stacks
from harness.stack.install import Installer
from harness.stack.readiness import Readiness, wait_ready
from harness.stack.reaper import tagged_pids
from harness.stack.stack import StackConfig
from harness.workflow.manifest import BUNDLED_WORKFLOWS, workflows_env
from tests.support.processes import alive, ends_with_the_test, run_down

pytestmark = pytest.mark.integration

CASE = "payment_idempotent-retry-worker_kill-after_commit"


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _interrupt_a_run_mid_case(
    runs: Path, env: dict[str, str], tmp_path: Path, stack_dir: Path
) -> None:
    """Ctrl-C of a run the warm runner took: the run ends as interrupted, with the case's
    evidence on disk, and leaves the warm stack free (the checks after this attach to it)."""
    before = set(runs.glob("*/attached.json"))
    with (tmp_path / "interrupted.log").open("w") as out:
        run = subprocess.Popen(
            [sys.executable, "-m", "harness", "run", "-k", CASE, "--alluredir", str(tmp_path)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def case_started() -> bool:
            assert run.poll() is None, (tmp_path / "interrupted.log").read_text()[-3000:]
            return any(
                (p.parent / "cases" / CASE / "history.jsonl").exists()
                for p in set(runs.glob("*/attached.json")) - before
            )

        wait_ready(Readiness("the interrupted case's start", case_started), deadline_s=120)
        run.send_signal(signal.SIGINT)
        assert run.wait(timeout=120) == 2, (tmp_path / "interrupted.log").read_text()[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    (own,) = [p.parent for p in set(runs.glob("*/attached.json")) - before]
    assert (own / "cases" / CASE / "evidence.json").is_file()
    runner_log = (stack_dir / "logs" / "warm-runner.log").read_text()
    assert re.search(r"run (\d+): exit 2\n$", runner_log), runner_log


@pytest.mark.long
def test_a_run_attaches_to_up_and_down_ends_everything(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    env = {**os.environ, "N8N_CHAOS_RUNS": str(runs)}
    up_log = tmp_path / "up.log"
    with up_log.open("w") as log:
        up = subprocess.Popen(
            [sys.executable, "-m", "harness", "up"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=ends_with_the_test,
        )
    try:

        def serving() -> bool:
            if up.poll() is not None:
                pytest.fail(f"`up` exited with {up.returncode}:\n{up_log.read_text()[-3000:]}")
            return bool(live_stacks(runs))

        wait_ready(Readiness("`up` serving attach", serving), deadline_s=300)
        stack_dir = live_stacks(runs)[0]
        state = json.loads((stack_dir / STATE_FILE).read_text())
        assert (stack_dir / STATE_FILE).stat().st_mode & 0o777 == 0o600  # it holds secrets
        assert f"--attach {stack_dir}" in up_log.read_text()

        run = subprocess.run(
            [sys.executable, "-m", "harness", "run", "-k", CASE, "--alluredir", str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
        assert f"attached to the warm stack {state['run_id']}" in run.stdout
        own = [p.parent for p in runs.glob("*/attached.json") if not p.parent.is_symlink()]
        assert len(own) == 1 and (own[0] / "cases" / CASE / "evidence.json").is_file()
        runner_log = (stack_dir / "logs" / "warm-runner.log").read_text()
        assert re.search(rf"run (\d+): run -k {CASE} .*\nrun \1: exit 0", runner_log), runner_log

        _interrupt_a_run_mid_case(runs, env, tmp_path, stack_dir)

        stack = attach(stack_dir, Installer().install(), _bundled_config(runs))
        try:
            for proc in stack.processes:
                proc.ensure_running()
            workers = {w.name: w.pid for w in stack.workers}
            restarted = [n for n, pid in workers.items() if pid != state["pids"][n]]
            assert restarted, "the case killed a worker; `up` should have a new one"
            for name, pid in workers.items():
                assert pid is not None and _ppid(pid) == up.pid, f"{name} is not `up`'s child"
            url = f"{stack.main.base_url}/healthz/readiness"
            assert httpx.get(url, timeout=10).status_code == 200
            with pytest.raises(AttachError, match="in use by pid"):
                attach(stack_dir, Installer().install(), _bundled_config(runs))
        finally:
            stack.stop()
        pids = [*workers.values(), *state["pids"].values(), state["reaper_pid"]]

        down = run_down(env, timeout_s=120)
        assert down.returncode == 0, down.stderr
        assert up.wait(timeout=60) == 0, up_log.read_text()[-3000:]
        for pid in pids:
            assert pid is None or not alive(pid), f"pid {pid} survived `down`"
        assert tagged_pids(state["run_id"]) == []
        assert not (stack_dir / STATE_FILE).exists()
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()


def _bundled_config(runs: Path) -> StackConfig:
    """The config of a run of the bundled workflows (their $env and $vars, as `up` has)."""
    env, variables = workflows_env(BUNDLED_WORKFLOWS)
    return StackConfig(runs_root=runs, n8n_env=env, variables=variables)
