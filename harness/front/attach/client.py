"""The attacher's side (what ``n8n-chaos run`` and the pytest plugin use): find a live warm
stack, lock it, and rebuild the stack's typed handles from ``attach.json``; its processes are
driven through the owner."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psycopg

from harness import loopback
from harness.errors import AttachError, HarnessError, ServiceExited
from harness.front.attach.protocol import (
    DEPLOYED_FILE,
    LOCK_FILE,
    STATE_FILE,
    Progress,
    config_shape,
    decode,
    encode,
    read_state,
    shape_differences,
    write_private,
)
from harness.stack.deploy import DeployedWorkflow, give_id
from harness.stack.install import Installation
from harness.stack.intercept.config import ProxyConfig
from harness.stack.intercept.launcher import InterceptProxy
from harness.stack.n8n import N8nProcess, Role, SharedEnv
from harness.stack.n8n_api import N8nApi, Owner
from harness.stack.postgres import PostgresServer
from harness.stack.process import ManagedProcess
from harness.stack.provider import ProviderServer, ProviderSettings
from harness.stack.readiness import Readiness, wait_ready
from harness.stack.reaper import OwnersReaper
from harness.stack.redis import RedisServer
from harness.stack.run import RunContext, default_runs_root, new_run_id, point_latest
from harness.stack.stack import Stack, StackConfig
from harness.stack.toxiproxy import ToxiproxyClient
from harness.stack.toxiproxy_server import ToxiproxyServer


class OwnerClient:
    """Requests to the ``up`` process; one short connection per request, so threads (a
    fault's timer, the case) never wait on each other's slow stop."""

    def __init__(self, sock: Path, owner_pid: int) -> None:
        self.sock = sock
        self.owner_pid = owner_pid

    def call(self, op: str, name: str = "", timeout_s: float = 10.0, **extra: Any) -> Any:
        request = encode({"op": op, "name": name, **extra})
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(timeout_s)
                conn.connect(str(self.sock))
                conn.sendall(request)
                with conn.makefile("rb") as reply_file:
                    line = reply_file.readline()
        except OSError as exc:
            raise AttachError(
                f"the `n8n-chaos up` process (pid {self.owner_pid}) that owns the warm stack "
                f"did not answer ({exc}); it may have ended: start it again, or run with "
                "--no-attach"
            ) from exc
        if not line:
            raise AttachError(
                f"the `n8n-chaos up` process (pid {self.owner_pid}) closed the connection; "
                "the warm stack is ending: run again once it is up, or with --no-attach"
            )
        reply = decode(line)
        if not reply.get("ok"):
            raise ServiceExited(name or "stack owner", str(reply.get("error")))
        return reply


class _NotOurs:
    """The registry of a process this side never starts (the owner's reaper has it)."""

    def started(self, pgid: int) -> None:
        del pgid

    def ended(self, pgid: int) -> None:
        del pgid


class RemoteProcess(ManagedProcess):
    """A process of the warm stack, driven through its owner (same interface as the
    process a run starts itself; the log is read straight from the owner's run dir)."""

    def __init__(self, client: OwnerClient, name: str, log_path: Path, run_id: str) -> None:
        super().__init__(
            name=name, argv=(), env={}, log_path=log_path, run_id=run_id, registry=_NotOurs()
        )
        self._client = client

    def _do(self, op: str, timeout_s: float = 10.0, **extra: Any) -> dict[str, Any]:
        reply: dict[str, Any] = self._client.call(op, self.name, timeout_s, **extra)
        self.paused = bool(reply["paused"])
        self.last_returncode = reply["last_returncode"]
        return reply

    def start(self) -> None:
        self._do("start")

    def stop(self, grace_s: float = 10.0) -> None:
        self._do("stop", timeout_s=grace_s + 10.0, grace_s=grace_s)

    def kill(self) -> None:
        self._do("kill")

    def pause(self) -> None:
        self._do("pause")

    def resume(self) -> None:
        self._do("resume")

    @property
    def pid(self) -> int | None:
        pid = self._do("state")["pid"]
        return int(pid) if pid is not None else None

    @property
    def running(self) -> bool:
        return bool(self._do("state")["running"])

    @property
    def returncode(self) -> int | None:
        code = self._do("state")["exit_code"]
        return int(code) if code is not None else None

    def ensure_running(self) -> None:
        code = self._do("state")["exit_code"]
        if code is not None:
            raise ServiceExited(self.name, f"exited with code {code}", self.log_tail())


@dataclass
class AttachLock:
    """Exclusive use of one warm stack (released by the kernel if its holder dies)."""

    handle: IO[str]

    @classmethod
    def take(cls, run_dir: Path) -> AttachLock:
        path = run_dir / LOCK_FILE
        handle = path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another run"
            handle.close()
            raise AttachError(
                f"the warm stack in {run_dir} is in use by {holder}; two runs on one stack "
                "would disturb each other's cases: wait for it to end, or pass --no-attach "
                "to start a fresh stack"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} ({' '.join(sys.argv)[:200]}) since {time.ctime()}\n")
        handle.flush()
        return cls(handle)

    def release(self) -> None:
        if not self.handle.closed:
            self.handle.seek(0)
            self.handle.truncate()
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()


@dataclass
class AttachedStack(Stack):
    """A warm stack another process owns, used by this run alone until ``stop``."""

    owner_state: dict[str, Any] = field(default_factory=dict)
    lock: AttachLock | None = None

    @property
    def owner_run_dir(self) -> Path:
        return Path(self.owner_state["run_dir"])

    def stop(self) -> None:
        """Detach: leave the stack healthy for the next run, close clients, unlock.
        Nothing is stopped: the stack is the owner's."""
        with contextlib.suppress(Exception):
            self.reset_links()
            self.revive()
            if self.provider is not None:
                self.provider.control.clear_faults()
                self.provider.restore_ttl()
            if self.intercept is not None:  # no host is left mapped to a fake
                self.intercept.set_hosts([])
        if self.api is not None:
            self.api.close()
        self.toxiproxy.close()
        if self.provider is not None:
            self.provider.control.close()
        if self.lock is not None:
            self.lock.release()

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "owner_pid": self.owner_state["owner_pid"],
            "reaper_pid": self.owner_state["reaper_pid"],
            "attached_to": str(self.owner_run_dir),
            "evidence_dir": str(self.run.run_dir),
        }

    def deploy(self, workflow: dict[str, Any], workflow_id: str | None = None) -> DeployedWorkflow:
        """Reuse the workflow already deployed with the same content; replace a changed one
        (same name) so its webhook path (and the id a caller names) is free."""
        cache_path = self.owner_run_dir / DEPLOYED_FILE
        cache: dict[str, Any] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
        name = str(workflow.get("name"))
        digest = hashlib.sha256(json.dumps(workflow, sort_keys=True).encode()).hexdigest()
        known = cache.get(name)
        if known is not None and known["digest"] == digest and self._exists(known["id"]):
            return DeployedWorkflow(known["id"], name, known["webhook_url"], 0.0)
        if known is not None:
            self._unpublish(known["id"])
            if workflow_id is not None and known["id"] == workflow_id:
                # The older copy keeps its rows under another id: the caller's is free.
                give_id(self.postgres_dsn, workflow_id, f"old-{secrets.token_hex(6)}")
        deployed = super().deploy(workflow, workflow_id)
        cache[name] = {"digest": digest, "id": deployed.id, "webhook_url": deployed.webhook_url}
        write_private(cache_path, json.dumps(cache, indent=2) + "\n")
        return deployed

    def _unpublish(self, workflow_id: str) -> None:
        """Free the webhook path of an older copy (n8n refuses to delete a published
        workflow, and unpublishes asynchronously): it stays, unpublished."""
        assert self.owner is not None
        for action in ("unpublish", "deactivate"):  # the older name, before 2.x
            response = loopback.post(
                f"{self.main.base_url}/api/v1/workflows/{workflow_id}/{action}",
                headers={"X-N8N-API-KEY": self.owner.api_key},
                timeout=30,
            )
            if response.status_code != 404:
                break

        def path_free() -> bool:
            with psycopg.connect(self.postgres_dsn) as conn:
                row = conn.execute(
                    'SELECT 1 FROM webhook_entity WHERE "workflowId" = %s', (workflow_id,)
                ).fetchone()
            return row is None

        wait_ready(Readiness(f"unpublishing the older copy {workflow_id}", path_free), 60.0)

    def _exists(self, workflow_id: str) -> bool:
        with psycopg.connect(self.postgres_dsn) as conn:
            row = conn.execute("SELECT 1 FROM workflow_entity WHERE id = %s", (workflow_id,))
            return row.fetchone() is not None


def _live(state: dict[str, Any]) -> bool:
    """The owner still runs and answers (a SIGKILLed owner leaves a stale attach.json)."""
    try:
        os.kill(int(state["owner_pid"]), 0)
        client = OwnerClient(Path(state["socket"]), int(state["owner_pid"]))
        return bool(client.call("ping", timeout_s=2.0)["run_id"] == state["run_id"])
    except (OSError, HarnessError):
        return False


def live_stacks(runs_root: Path) -> list[Path]:
    """Run dirs of live `up` stacks under the runs folder, newest first."""
    if not runs_root.is_dir():
        return []
    found = []
    for state_file in runs_root.glob(f"*/{STATE_FILE}"):
        if state_file.parent.is_symlink():  # `latest`
            continue
        state = read_state(state_file.parent)
        if state is not None and _live(state):
            found.append((float(state.get("started_at", 0)), state_file.parent))
    return [path for _, path in sorted(found, reverse=True)]


def attach(
    run_dir: Path,
    installation: Installation,
    config: StackConfig,
    progress: Progress = lambda message: None,
) -> AttachedStack:
    """Attach to the live stack of ``run_dir`` (its `up` run directory); raise AttachError
    when it is gone, shaped differently or in use."""
    run_dir = run_dir.resolve()
    state = read_state(run_dir)
    if state is None or not _live(state):
        raise AttachError(
            f"no live stack in {run_dir}: start one with `n8n-chaos up` (the run directory "
            "it prints), or leave --attach out to start a fresh stack"
        )
    differences = shape_differences(state["shape"], config_shape(config))
    if differences:
        raise AttachError(
            f"the warm stack in {run_dir} is not the one this run asks for ("
            + "; ".join(differences)
            + "): start `n8n-chaos up` with the same options, or pass --no-attach"
        )
    started = time.monotonic()
    lock = AttachLock.take(run_dir)
    try:
        stack = _rebuild(state, installation, config, lock)
        # The backing services must be up now, not at the first fault. An n8n process may
        # be dead or paused (an attached run killed mid-case): each case revives those.
        n8n = {p.process.name for p in stack.n8n_processes}
        for proc in stack.processes:
            if proc.name not in n8n:
                proc.ensure_running()
    except BaseException:
        lock.release()
        raise
    stack.timings["attach"] = time.monotonic() - started
    progress(f"attached to the warm stack {state['run_id']} (evidence in {stack.run.run_dir})")
    return stack


def attach_for_session(
    installation: Installation,
    config: StackConfig,
    *,
    named: Path | None,
    allowed: bool,
    progress: Progress,
) -> AttachedStack | None:
    """The session's attach decision: the named stack (errors if unusable), else the newest
    live `up` stack under the runs folder if it has this run's shape, else None (start one)."""
    if not allowed:
        return None
    if named is not None:
        return attach(named, installation, config, progress)
    candidates = live_stacks(config.runs_root or default_runs_root())
    if not candidates:
        return None
    chosen = candidates[0]
    state = read_state(chosen)
    differences = shape_differences(state["shape"] if state else {}, config_shape(config))
    if differences:
        progress(
            f"not attaching to the warm stack in {chosen} ({'; '.join(differences)}); "
            "starting a fresh one"
        )
        return None
    return attach(chosen, installation, config, progress)


def _own_run_dir(config: StackConfig) -> Path:
    """Where this run's evidence goes: the same place as for a stack of its own."""
    if config.run_dir is not None:
        run_dir = config.run_dir
    else:
        run_dir = (config.runs_root or default_runs_root()).resolve() / new_run_id()
    (run_dir / "cases").mkdir(parents=True, exist_ok=True)
    if config.run_dir is None:
        point_latest(run_dir)
    return run_dir


def _rebuild(
    state: dict[str, Any], inst: Installation, config: StackConfig, lock: AttachLock
) -> AttachedStack:
    """Handles on the owner's stack, built from ``attach.json``; nothing is started."""
    run_id = str(state["run_id"])
    owner_dir = Path(state["run_dir"])
    reaper = OwnersReaper(run_id, int(state["reaper_pid"]))
    # Handles are built in the owner's run dir (logs, n8n user folders, provider ledger) ...
    at_owner = RunContext(run_id=run_id, run_dir=owner_dir, reaper=reaper)
    # ... while this run's evidence goes to its own; the run id (Bull's queue prefix, the
    # process tag) stays the owner's.
    own_dir = _own_run_dir(config)
    write_private(
        own_dir / "attached.json",
        json.dumps({"stack_run_dir": str(owner_dir), "stack_run_id": run_id}) + "\n",
    )
    client = OwnerClient(Path(state["socket"]), int(state["owner_pid"]))
    pg = state["postgres"]
    postgres = PostgresServer(inst.postgres_bin_dir, at_owner, pg["port"], Path(pg["base_dir"]))
    postgres.password = pg["password"]
    postgres._login_password = pg["password"]  # rotated at the owner's bring-up
    redis = RedisServer(inst.redis_bin, at_owner, state["redis"]["port"])
    toxi = ToxiproxyServer(inst.toxiproxy_bin, at_owner, state["toxiproxy"]["port"])
    toxiproxy = ToxiproxyClient(toxi.api_url)
    pv = state["provider"]
    provider = (
        None
        if pv is None
        else ProviderServer(
            at_owner, pv["port"], pv["control_port"], ProviderSettings(**pv["settings"])
        )
    )
    # The environment is the owner's (it starts n8n); this one is never used to start.
    shared = SharedEnv(inst.node_bin, inst.n8n_bin, run_id, "", "", "", {})
    listen = {str(k): int(v) for k, v in state["listen_ports"].items()}
    n8n = {
        p["name"]: N8nProcess(
            p["name"], _role(p["role"]), at_owner, shared, p["http_port"], 0, 0, 0, {}
        )
        for p in state["n8n"]
    }
    owner = Owner(**state["owner"])
    intercept = _intercept(state, client, run_id)
    stack = AttachedStack(
        config=config,
        run=RunContext(run_id=run_id, run_dir=own_dir, reaper=reaper),
        postgres=postgres,
        redis=redis,
        toxiproxy_server=toxi,
        toxiproxy=toxiproxy,
        provider=provider,
        links=dict(state["links"]),
        listen_ports=listen,
        proxies={k: v for k, v in toxiproxy.proxies().items() if k in listen},
        main=n8n["main"],
        workers=[proc for proc in n8n.values() if proc.role == "worker"],
        webhook=n8n.get("webhook"),
        owner=owner,
        api=N8nApi(n8n["main"].base_url, owner.api_key, owner=owner),
        ledger_credential_id=str(state["ledger_credential_id"]),
        intercept=intercept,
        owner_state=state,
        lock=lock,
    )
    parts: list[PostgresServer | RedisServer | ToxiproxyServer | ProviderServer | N8nProcess]
    parts = [postgres, redis, toxi, *([provider] if provider else []), *n8n.values()]
    for part in parts:
        part.process = RemoteProcess(client, part.process.name, part.process.log_path, run_id)
    return stack


def _intercept(state: dict[str, Any], client: OwnerClient, run_id: str) -> InterceptProxy | None:
    """The owner's intercepting proxy: its host map, journal, listeners and CA, driven like
    the other processes through the owner (None: the warm stack runs without one)."""
    config = state.get("intercept")
    if config is None:
        return None
    log = state.get("logs", {}).get("intercept") or Path(state["run_dir"]) / "logs/intercept.log"
    process = RemoteProcess(client, "intercept", Path(log), run_id)
    return InterceptProxy(ProxyConfig.from_dict(config), process)


def _role(value: str) -> Role:
    if value not in ("main", "worker", "webhook"):
        raise AttachError(f"attach.json names an unknown n8n role {value!r}")
    return value  # type: ignore[return-value]
