"""Attach without n8n: the owner's process endpoint drives real (``sleep``) processes, the
lock refuses a second run, and the config shape decides whether a stack fits."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.errors import ServiceExited
from harness.front.attach import (
    STATE_FILE,
    AttachError,
    AttachLock,
    OwnerClient,
    ProcessOwner,
    RemoteProcess,
    config_shape,
    live_stacks,
    serve_processes,
    shape_differences,
)
from harness.front.attach.client import _intercept as attached_intercept
from harness.front.attach.server import _state as server_state
from harness.stack.intercept.journal import JournalEntry, JournalWriter
from harness.stack.intercept.launcher import InterceptProxy
from harness.stack.n8n_api import Owner
from harness.stack.process import ManagedProcess
from harness.stack.run import RunContext
from harness.stack.stack import StackConfig


class Registry:
    def __init__(self) -> None:
        self.live: set[int] = set()

    def started(self, pgid: int) -> None:
        self.live.add(pgid)

    def ended(self, pgid: int) -> None:
        self.live.discard(pgid)


@pytest.fixture
def owned(short_dir: Path) -> Iterator[tuple[ManagedProcess, Registry, RemoteProcess]]:
    """A process the 'owner' (this test) started, and the attacher's handle on it."""
    registry = Registry()
    proc = ManagedProcess(
        name="worker0",
        argv=["sleep", "60"],
        env={"PATH": os.environ["PATH"]},
        log_path=short_dir / "worker0.log",
        run_id="test-run",
        registry=registry,
    )
    proc.start()
    sock = short_dir / "attach.sock"
    serving = serve_processes(sock, ProcessOwner("test-run", [proc]))
    remote = RemoteProcess(OwnerClient(sock, os.getpid()), "worker0", proc.log_path, "test-run")
    try:
        yield proc, registry, remote
    finally:
        serving.close()
        proc.stop(grace_s=1)


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _settles_in(pid: int, stopped: bool, deadline_s: float = 5.0) -> bool:
    """A signal is delivered asynchronously: poll the kernel's state, within a deadline."""
    end = time.monotonic() + deadline_s
    while (_state(pid) == "T") != stopped:
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def test_the_socket_is_private_to_the_user(short_dir: Path) -> None:
    sock = short_dir / "s.sock"
    serving = serve_processes(sock, ProcessOwner("r", []))
    try:
        assert sock.stat().st_mode & 0o777 == 0o600
    finally:
        serving.close()
    assert not sock.exists()


def test_remote_kill_and_restart_are_done_by_the_owner(
    owned: tuple[ManagedProcess, Registry, RemoteProcess],
) -> None:
    proc, registry, remote = owned
    first = proc.pid
    assert remote.pid == first and remote.running
    remote.kill()
    assert not proc.running and not remote.running
    assert remote.last_returncode == -9  # SIGKILL, as the owner reaped it
    with pytest.raises(ServiceExited, match="worker0: exited with code -9"):
        remote.ensure_running()
    remote.start()
    # The new process is the owner's child, announced to the owner's registry.
    assert proc.pid is not None and proc.pid != first and remote.pid == proc.pid
    assert registry.live == {proc.pid}
    assert int(Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) == (
        os.getpid()
    )
    remote.ensure_running()


def test_remote_pause_and_resume(owned: tuple[ManagedProcess, Registry, RemoteProcess]) -> None:
    proc, _, remote = owned
    assert proc.pid is not None
    remote.pause()
    assert remote.paused and _settles_in(proc.pid, stopped=True)
    remote.resume()
    assert not remote.paused and _settles_in(proc.pid, stopped=False)


def test_an_unknown_process_is_refused(
    owned: tuple[ManagedProcess, Registry, RemoteProcess],
) -> None:
    _, _, remote = owned
    client = remote._client
    with pytest.raises(ServiceExited, match="no process 'worker9' in run test-run"):
        client.call("kill", "worker9")


def test_a_gone_owner_is_a_clear_error(short_dir: Path) -> None:
    client = OwnerClient(short_dir / "missing.sock", 4242)
    with pytest.raises(AttachError, match=r"`n8n-chaos up` process \(pid 4242\).*--no-attach"):
        client.call("ping")


def test_a_second_run_cannot_take_the_stack(short_dir: Path) -> None:
    first = AttachLock.take(short_dir)
    with pytest.raises(AttachError, match=rf"in use by pid {os.getpid()} .*--no-attach"):
        AttachLock.take(short_dir)
    first.release()
    AttachLock.take(short_dir).release()


def test_a_stale_state_file_is_not_a_live_stack(short_dir: Path) -> None:
    run = short_dir / "20260101-000000-abcdef"
    run.mkdir()
    (run / STATE_FILE).write_text(
        json.dumps({"run_id": run.name, "owner_pid": os.getpid(), "socket": str(run / "x.sock")})
    )
    assert live_stacks(short_dir) == []


def test_a_live_stack_is_found(short_dir: Path) -> None:
    run = short_dir / "r1"
    run.mkdir()
    serving = serve_processes(run / "attach.sock", ProcessOwner("r1", []))
    try:
        (run / STATE_FILE).write_text(
            json.dumps(
                {"run_id": "r1", "owner_pid": os.getpid(), "socket": str(run / "attach.sock")}
            )
        )
        assert live_stacks(short_dir) == [run]
    finally:
        serving.close()


def test_shape_compares_what_a_case_sees() -> None:
    base = config_shape(StackConfig())
    assert shape_differences(base, config_shape(StackConfig(ready_timeout_s=5, main_port=1))) == []
    assert shape_differences(base, config_shape(StackConfig(workers=3))) == [
        "workers: the stack has 2, this run wants 3"
    ]
    # A field the stack's harness did not know counts as its default.
    older = {k: v for k, v in base.items() if k != "webhook_processor"}
    assert shape_differences(older, base) == []


def _owners_proxy(run_dir: Path, registry: Registry) -> InterceptProxy:
    """The owner's intercepting proxy handle (its process a stand-in ``sleep``)."""
    run = RunContext(run_id="test-run", run_dir=run_dir, reaper=registry)  # type: ignore[arg-type]
    (run_dir / "logs").mkdir(exist_ok=True)
    listeners = {"main": (41001, None), "worker0": (41002, "127.0.0.1:42002")}
    proxy = InterceptProxy.for_run(run, listeners, Path("/venv/bin/python"))
    proxy.process = ManagedProcess(
        name="intercept",
        argv=["sleep", "60"],
        env={"PATH": os.environ["PATH"]},
        log_path=run_dir / "logs" / "intercept.log",
        run_id="test-run",
        registry=registry,
    )
    proxy.prepare()
    return proxy


def _state_of(proxy: InterceptProxy, run_dir: Path, sock: Path) -> dict[str, Any]:
    """attach.json as the owner writes it, for a stack whose only part is the proxy."""
    stack = SimpleNamespace(
        run=SimpleNamespace(run_id="test-run", run_dir=run_dir, reaper=SimpleNamespace(pid=1)),
        config=StackConfig(),
        postgres=SimpleNamespace(port=1, password="pw", base_dir=run_dir),
        redis=SimpleNamespace(port=2),
        toxiproxy_server=SimpleNamespace(port=3),
        provider=None,
        intercept=proxy,
        links={},
        listen_ports={},
        n8n_processes=[],
        owner=Owner("o@example.com", "pw", "key"),
        ledger_credential_id="1",
        processes=[proxy.process],
    )
    state: dict[str, Any] = json.loads(json.dumps(server_state(stack, sock, None)))  # type: ignore[arg-type]
    return state


def test_an_attached_run_gets_the_owners_proxy_not_a_second_one(short_dir: Path) -> None:
    registry = Registry()
    owned = _owners_proxy(short_dir, registry)
    owned.process.start()
    sock = short_dir / "attach.sock"
    serving = serve_processes(sock, ProcessOwner("test-run", [owned.process]))
    try:
        state = _state_of(owned, short_dir, sock)
        attached = attached_intercept(state, OwnerClient(sock, os.getpid()), "test-run")
        assert attached is not None
        # The same listeners (so the same env for n8n), files and CA as the owner's.
        assert attached.addresses == owned.addresses
        assert attached.env_for("worker0") == owned.env_for("worker0")
        assert attached.ca_cert == owned.ca_cert
        assert attached.config == owned.config
        # Its host map is the one the owner's proxy rereads; its journal the one it writes.
        attached.set_hosts(["API.Stripe.com"])
        assert json.loads(owned.config.hosts_file.read_text()) == {"hosts": ["api.stripe.com"]}
        entry = JournalEntry(
            1.0, "worker0", "POST", "https", "api.stripe.com", "/", 200, "forwarded"
        )
        JournalWriter(owned.config.journal).append(entry)
        assert attached.journal() == [entry]
        # Its process is the owner's, driven through the owner: nothing is started here.
        assert isinstance(attached.process, RemoteProcess)
        assert attached.process.pid == owned.process.pid and registry.live == {owned.process.pid}
        assert attached.process.log_path == owned.process.log_path
    finally:
        serving.close()
        owned.process.stop(grace_s=1)


def test_a_warm_stack_without_interception_attaches_without_a_proxy(short_dir: Path) -> None:
    state = {"intercept": None, "run_dir": str(short_dir)}
    assert attached_intercept(state, OwnerClient(short_dir / "s", 1), "r") is None
