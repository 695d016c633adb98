"""Unit tests of the stack's own building blocks: no n8n, no real services."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ConfigError, InstallError, PortInUse, ServiceExited, ServiceStartTimeout
from harness.stack.install import MITMPROXY_VERSION, Installer, node_version_for
from harness.stack.ports import HOST, ensure_free, free_port
from harness.stack.readiness import Readiness, wait_ready
from harness.stack.reaper import tagged_pids
from harness.stack.run import RunContext
from harness.stack.stack import StackConfig, _links
from tests.support.processes import alive


def _wait_gone(pid: int, deadline_s: float = 10.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_node_version_follows_n8n_engines() -> None:
    assert node_version_for("2.40.7").startswith("24.")
    assert node_version_for("2.33.7").startswith("22.")
    with pytest.raises(ConfigError, match="supported"):
        node_version_for("1.95.0")
    with pytest.raises(ConfigError, match=r"MAJOR\.MINOR\.PATCH"):
        node_version_for("latest")


def test_missing_redis_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("N8N_CHAOS_REDIS_BIN", raising=False)
    with pytest.raises(InstallError, match="apt-get install -y redis-server"):
        Installer(cache_dir=tmp_path).install()


def test_cached_part_is_not_installed_again(tmp_path: Path) -> None:
    calls: list[Path] = []
    installer = Installer(cache_dir=tmp_path)
    first = installer._ensure("demo", "1.0", calls.append)
    second = installer._ensure("demo", "1.0", calls.append)
    assert first == second == tmp_path / "demo" / "1.0"
    assert len(calls) == 1
    assert (first / ".complete").exists()


def test_failed_install_leaves_no_partial_part(tmp_path: Path) -> None:
    def broken(target: Path) -> None:
        (target / "half").write_text("x")
        raise InstallError("boom")

    with pytest.raises(InstallError):
        Installer(cache_dir=tmp_path)._ensure("demo", "1.0", broken)
    assert not (tmp_path / "demo" / "1.0").exists()
    assert [p.name for p in (tmp_path / "demo").iterdir() if not p.name.endswith(".lock")] == []


def test_parts_install_side_by_side_and_a_failure_waits_for_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Postgres and Toxiproxy meet at a barrier (serial installs would break it); n8n is
    installed after its Node; one part's failure is raised once the others are complete."""
    both = threading.Barrier(2, timeout=10)
    order: list[str] = []
    installer = Installer(cache_dir=tmp_path)

    def meet(target: Path) -> None:
        both.wait()

    def python(target: Path) -> None:
        (target / "venv" / "bin").mkdir(parents=True)
        (target / "venv" / "bin" / "python").symlink_to(sys.executable)

    def broken(target: Path) -> None:
        raise InstallError("n8n: boom")

    monkeypatch.setattr(installer, "_require_redis", lambda: Path("/usr/bin/redis-server"))
    monkeypatch.setattr(installer, "_install_node", lambda target: order.append("node"))
    monkeypatch.setattr(installer, "_install_n8n", lambda target, node: broken(target))
    monkeypatch.setattr(installer, "_install_postgres", meet)
    monkeypatch.setattr(installer, "_install_toxiproxy", meet)
    monkeypatch.setattr(installer, "_install_mitmproxy", python)
    with pytest.raises(InstallError, match="n8n: boom"):
        installer.install()
    assert order == ["node"]
    complete = sorted(p.parent.parent.name for p in tmp_path.glob("*/*/.complete"))
    assert complete == ["mitmproxy", "node", "postgres", "toxiproxy"]


def test_a_mitmproxy_venv_without_its_python_names_the_fix(tmp_path: Path) -> None:
    part = tmp_path / "mitmproxy" / MITMPROXY_VERSION
    (part / "venv" / "bin").mkdir(parents=True)
    (part / "venv" / "bin" / "python").symlink_to(tmp_path / "gone" / "python3")
    (part / ".complete").write_text("1\n")
    installer = Installer(cache_dir=tmp_path)
    assert installer.installed_mitmproxy_python() is None
    with pytest.raises(InstallError, match=f"remove {part} and run `n8n-chaos install`"):
        installer._mitmproxy()


def test_port_in_use_names_the_port_and_the_fix() -> None:
    with socket.socket() as holder:
        holder.bind((HOST, 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(PortInUse, match=f"{port}.*already in use"):
            ensure_free(port, "n8n main")
    ensure_free(free_port(), "n8n main")


def test_readiness_times_out_with_the_log_tail(tmp_path: Path) -> None:
    run = RunContext.create(tmp_path)
    try:
        proc = run.process(
            "sleeper",
            [
                sys.executable,
                "-c",
                "print('still booting', flush=True); import time; time.sleep(60)",
            ],
            {},
        )
        proc.start()
        with pytest.raises(ServiceStartTimeout, match="still booting"):
            wait_ready(Readiness("sleeper", lambda: False, proc), deadline_s=1.0, interval_s=0.05)
        proc.stop()
    finally:
        run.reaper.close()


def test_readiness_reports_an_exited_process_apart(tmp_path: Path) -> None:
    run = RunContext.create(tmp_path)
    try:
        proc = run.process(
            "crasher",
            [sys.executable, "-c", "import sys; print('bad config', flush=True); sys.exit(3)"],
            {},
        )
        proc.start()
        with pytest.raises(ServiceExited, match="code 3"):
            wait_ready(Readiness("crasher", lambda: False, proc), deadline_s=30.0)
    finally:
        run.reaper.close()


def test_stop_ends_the_whole_process_group(tmp_path: Path) -> None:
    run = RunContext.create(tmp_path)
    try:
        # A parent that starts a child of its own, as n8n starts its task runner.
        proc = run.process(
            "parent", ["bash", "-c", "sleep 300 & echo $! > child.pid; wait"], {}, cwd=tmp_path
        )
        proc.start()
        child_file = tmp_path / "child.pid"
        assert wait_ready(Readiness("child", lambda: child_file.read_text().strip() != ""), 10) >= 0
        child = int(child_file.read_text())
        parent = proc.pid
        assert parent is not None
        proc.stop(grace_s=5)
        assert _wait_gone(parent) and _wait_gone(child)
        assert proc.pid is None  # a reaped pid is forgotten, never signalled again
    finally:
        run.reaper.close()


def _reaches_state(pid: int, state: str) -> bool:
    """Whether /proc shows the process in ``state`` (T stopped, S sleeping) within 5 s."""
    status = Path(f"/proc/{pid}/status")
    return wait_ready(Readiness(state, lambda: f"State:\t{state}" in status.read_text()), 5) >= 0


def test_pause_and_resume_stop_and_continue_the_process(tmp_path: Path) -> None:
    run = RunContext.create(tmp_path)
    try:
        proc = run.process("sleeper", ["sleep", "300"], {})
        proc.start()
        pid = proc.pid
        assert pid is not None
        proc.pause()
        assert proc.paused and _reaches_state(pid, "T")
        proc.resume()
        assert not proc.paused and _reaches_state(pid, "S")
        proc.kill()
        assert _wait_gone(pid)
    finally:
        run.reaper.close()


def test_reaper_sweeps_when_its_owner_is_killed(tmp_path: Path) -> None:
    """The owner (think: pytest) dies by SIGKILL; nothing it started may survive."""
    script = tmp_path / "owner.py"
    script.write_text(
        "import sys, time\n"
        "from pathlib import Path\n"
        "from harness.stack.run import RunContext\n"
        f"run = RunContext.create(Path({str(tmp_path)!r}))\n"
        # setsid'd grandchild that would escape a plain killpg of the owner
        "p = run.process('svc', ['bash', '-c', 'setsid sleep 300 & sleep 300'], {})\n"
        "p.start()\n"
        "print(run.run_id, run.reaper.pid, p.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    owner = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert owner.stdout is not None
    run_id, reaper_pid, svc_pid = owner.stdout.readline().split()
    assert wait_ready(Readiness("grandchild", lambda: len(tagged_pids(run_id)) >= 3), 10) >= 0
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    assert _wait_gone(int(reaper_pid))
    assert _wait_gone(int(svc_pid))
    assert tagged_pids(run_id) == []


def test_topology_proxies_every_link_a_fault_may_cut() -> None:
    config = StackConfig(workers=2, webhook_processor=True, upstreams={"provider": "127.0.0.1:9"})
    links = _links(config, config.upstreams, "127.0.0.1:1", "127.0.0.1:2", 3, 4)
    for i in (0, 1):
        assert links[f"worker{i}_postgres"] == "127.0.0.1:1"
        assert links[f"worker{i}_redis"] == "127.0.0.1:2"
        assert links[f"worker{i}_provider"] == "127.0.0.1:9"
    assert links["main_redis"] == "127.0.0.1:2"
    assert links["client_main"] == "127.0.0.1:3"
    assert links["client_webhook"] == "127.0.0.1:4"
    assert links["ledger_postgres"] == "127.0.0.1:1"


def test_bad_stack_config_is_refused() -> None:
    with pytest.raises(ConfigError, match="--workers"):
        StackConfig(workers=0).validate()
    with pytest.raises(ConfigError, match="HOST:PORT"):
        StackConfig(upstreams={"mine": "nowhere"}, provider=None).validate()
    with pytest.raises(ConfigError, match="taken by the bundled provider"):
        StackConfig(upstreams={"provider": "127.0.0.1:9"}).validate()


def test_n8n_processes_share_the_installs_compile_cache(tmp_path: Path) -> None:
    from harness.stack.install import Installation
    from harness.stack.n8n import SharedEnv

    inst = Installation(*(tmp_path / p for p in "npbtr"), tmp_path / "py", "2.40.7", tmp_path)
    shared = SharedEnv(inst.node_bin, inst.n8n_bin, "run", "key", "pw", "http://h/", {})
    assert "NODE_COMPILE_CACHE" not in shared.for_process(tmp_path, 1, 2, {})
    cached = SharedEnv(
        inst.node_bin, inst.n8n_bin, "run", "key", "pw", "http://h/", {}, inst.compile_cache
    )
    env = cached.for_process(tmp_path, 1, 2, {})
    assert env["NODE_COMPILE_CACHE"] == str(tmp_path / "node-compile-cache")


def test_a_stacks_processes_stop_side_by_side_and_one_failing_stops_no_other() -> None:
    from harness.stack.stack import _stop_side_by_side

    together = threading.Barrier(2, timeout=5)
    stopped: list[str] = []

    class Fake:
        def __init__(self, name: str, fails: bool = False) -> None:
            self.name, self.fails = name, fails

        def stop(self, grace_s: float) -> None:
            if self.fails:
                raise OSError("gone")
            together.wait()  # returns only if the other one is stopping at the same time
            stopped.append(self.name)

    procs: list[Any] = [Fake("main"), Fake("broken", fails=True), Fake("worker0")]
    _stop_side_by_side(procs, concurrently=True)
    assert sorted(stopped) == ["main", "worker0"]


def test_only_modules_the_installed_n8n_knows_are_turned_off(tmp_path: Path) -> None:
    from harness.stack.n8n import disabled_modules_env

    n8n_bin = tmp_path / "node_modules" / "n8n" / "bin" / "n8n"
    module_list = tmp_path / "node_modules/@n8n/backend-common/dist/modules/modules.config.js"
    module_list.parent.mkdir(parents=True)
    # An n8n that knows the call-home module, one off the execution path, and data tables.
    module_list.write_text("exports.MODULE_NAMES = ['mcp-registry', 'insights', 'data-table'];")
    assert disabled_modules_env(n8n_bin) == {"N8N_DISABLED_MODULES": "mcp-registry,insights"}
    module_list.write_text("exports.MODULE_NAMES = ['data-table'];")
    assert disabled_modules_env(n8n_bin) == {}


@pytest.mark.parametrize(("editor", "disabled"), [(False, "true"), (True, None)])
def test_main_has_its_editor_only_when_a_person_will_open_it(
    tmp_path: Path, editor: bool, disabled: str | None
) -> None:
    from harness.stack.install import Installation
    from harness.stack.stack import Stack

    inst = Installation(*(tmp_path / p for p in "npbtr"), tmp_path / "py", "2.40.7", tmp_path)
    run = RunContext.create(tmp_path / "runs")
    try:
        config = StackConfig(provider=None, intercept=False, editor=editor)
        stack = Stack._assemble(inst, config, run)  # objects only: nothing starts
        try:
            assert stack.main.process.env.get("N8N_DISABLE_UI") == disabled
            # ... and its own task runner: it runs no execution itself then.
            offloads = stack.main.process.env.get("OFFLOAD_MANUAL_EXECUTIONS_TO_WORKERS")
            assert offloads == disabled
            assert all("N8N_DISABLE_UI" not in w.process.env for w in stack.workers)
        finally:
            stack.postgres.remove_data()  # the data folder it made in the temp dir
    finally:
        run.reaper.close()


def test_stop_asks_with_the_process_own_signal(tmp_path: Path) -> None:
    # As Postgres: SIGTERM would only start a shutdown that waits for every client; the
    # signal that ends it cleanly and at once is another (SIGINT, a fast shutdown).
    script = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGINT, lambda *_: sys.exit(3))\n"
        "open('ready', 'w').close()\n"
        "time.sleep(300)\n"
    )
    run = RunContext.create(tmp_path)
    try:
        proc = run.process(
            "server", [sys.executable, "-c", script], {}, cwd=tmp_path, stop_signal=signal.SIGINT
        )
        proc.start()
        assert wait_ready(Readiness("ready", (tmp_path / "ready").exists), 10) >= 0
        proc.stop(grace_s=30)  # a SIGTERM would be ignored and this would wait the 30 s
        assert proc.last_returncode == 3  # it exited on its own, not by the SIGKILL after
    finally:
        run.reaper.close()
