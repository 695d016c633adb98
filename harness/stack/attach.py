"""Attach to a warm stack: a run uses the stack that ``n8n-chaos up`` keeps running.

Who does what:
- The ``up`` process (the *owner*) keeps its ``Stack`` and serves ``<run dir>/attach.sock``
  (``serve``). Every process action an attached run asks for (kill, pause, resume, stop,
  start) is done by the owner on its own ``ManagedProcess``: a worker a fault restarts is
  the owner's child, announced to the owner's reaper, ended by ``down``, and it does not die
  when the attached run exits. Environments and their secrets never leave the owner.
- ``<run dir>/attach.json`` (0600) holds what an attacher rebuilds its handles from: ports,
  the database password, the API key, the ledger credential, log paths, the config's shape.
- An attached run (``attach``) gets an ``AttachedStack``: the same typed handles as a stack
  it started (its processes are ``RemoteProcess``-es), its evidence in its own run directory,
  and an exclusive lock on the warm stack (``flock`` on ``<run dir>/attach.lock``), so two
  attached runs never share it. Ending it (``stop``) leaves the stack as it found it and
  stops nothing.
- Deployed workflows stay in the warm n8n; an attached run reuses the ones with the same
  content (``<run dir>/deployed.json``) and replaces changed ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import socket
import socketserver
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psycopg

from harness import loopback
from harness.errors import AttachError, HarnessError, ServiceExited
from harness.stack.deploy import DeployedWorkflow
from harness.stack.install import Installation
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
from harness.warm import protocol as warm

STATE_FILE = "attach.json"
SOCKET_FILE = "attach.sock"
LOCK_FILE = "attach.lock"
DEPLOYED_FILE = "deployed.json"
# Config fields that do not change what a case sees; the rest must match to attach.
_NOT_SHAPE = frozenset(
    {"ready_timeout_s", "runs_root", "run_dir", "main_port", "db_template", "toxiproxy_seed"}
)
_UNIX_PATH_MAX = 100  # sun_path is 108 bytes; keep a margin

Progress = Callable[[str], None]


# -- config shape -----------------------------------------------------------------------
def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    return dict(value)  # type: ignore[call-overload]  # the Mapping fields


def config_shape(config: StackConfig) -> dict[str, Any]:
    """The fields of a config that a case depends on, as plain JSON."""
    chosen = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if f.name not in _NOT_SHAPE
    }
    shape: dict[str, Any] = json.loads(json.dumps(chosen, default=_plain, sort_keys=True))
    return shape


def shape_differences(stack_shape: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """What differs; a field one side does not know (a harness of another version) counts
    as its default."""
    defaults = config_shape(StackConfig())
    differences = []
    for key in sorted(set(stack_shape) | set(wanted)):
        have = stack_shape.get(key, defaults.get(key))
        want = wanted.get(key, defaults.get(key))
        if have != want:
            differences.append(f"{key}: the stack has {have!r}, this run wants {want!r}")
    return differences


# -- the owner's side (`n8n-chaos up`) ---------------------------------------------------
def _snapshot(proc: ManagedProcess) -> dict[str, Any]:
    running = proc.running
    return {
        "pid": proc.pid,
        "running": running,
        "paused": proc.paused,
        "last_returncode": proc.last_returncode,
        # What ManagedProcess.ensure_running looks at: the live code, or the reaped one.
        "exit_code": proc.returncode if proc.pid is not None else proc.last_returncode,
    }


class ProcessOwner:
    """Answers the attacher's requests on the owner's own process handles."""

    def __init__(self, run_id: str, processes: list[ManagedProcess]) -> None:
        self.run_id = run_id
        self.by_name = {p.name: p for p in processes}
        # ManagedProcess is not thread-safe; one action at a time per process, while two
        # processes may be acted on at once (a timer thread heals while a case kills).
        self.locks = {name: threading.Lock() for name in self.by_name}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "run_id": self.run_id, "pid": os.getpid()}
        name = str(request.get("name"))
        proc = self.by_name.get(name)
        if proc is None:
            return {"ok": False, "error": f"no process {name!r} in run {self.run_id}"}
        with self.locks[name]:
            try:
                if op == "start":
                    proc.start()
                elif op == "stop":
                    proc.stop(grace_s=float(request.get("grace_s", 10.0)))
                elif op == "kill":
                    proc.kill()
                elif op == "pause":
                    proc.pause()
                elif op == "resume":
                    proc.resume()
                elif op != "state":
                    return {"ok": False, "error": f"unknown request {op!r}"}
            except HarnessError as exc:
                return {"ok": False, "error": str(exc)}
            return {"ok": True, **_snapshot(proc)}


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        for line in self.rfile:
            reply = self.server.owner.answer(json.loads(line))
            self.wfile.write(json.dumps(reply).encode() + b"\n")
            self.wfile.flush()


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, owner: ProcessOwner) -> None:
        self.owner = owner
        super().__init__(path, _Handler, bind_and_activate=False)


def socket_path(run_dir: Path, run_id: str, name: str = SOCKET_FILE) -> Path:
    """In the run dir when the path fits a unix socket address, else in the temp dir
    (where the reaper finds it: ``harness.stack.reaper.remove_run_data``)."""
    path = run_dir / name
    if len(str(path)) < _UNIX_PATH_MAX:
        return path
    return Path(tempfile.gettempdir()) / f"n8n-chaos-{run_id}-{name}"


@dataclass
class Serving:
    """The owner's attach endpoint; ``close`` before the stack stops."""

    server: _Server
    thread: threading.Thread
    files: list[Path]
    runner: ManagedProcess | None = None
    runner_error: str | None = None  # why there is no warm runner

    def close(self) -> None:
        for path in self.files:  # first: nobody finds or attaches to a stack that is ending
            path.unlink(missing_ok=True)
        if self.runner is not None:  # its runs end with it (one process group)
            self.runner.stop(grace_s=5.0)
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve(stack: Stack) -> Serving:
    """Make the stack attachable: serve its process handles, start the warm runner
    (harness.warm), write ``attach.json``."""
    if stack.owner is None or stack.ledger_credential_id is None:
        raise AttachError("the stack did not finish its setup (no owner account yet)")
    if getattr(stack.config, "backend", "native") != "native":
        raise AttachError("attaching works with the native backend only")
    run_dir = stack.run.run_dir
    sock = socket_path(run_dir, stack.run.run_id)
    serving = serve_processes(sock, ProcessOwner(stack.run.run_id, stack.processes))
    runner_sock = socket_path(run_dir, stack.run.run_id, warm.SOCKET_FILE)
    try:
        serving.runner = _warm_runner(stack, runner_sock)
        serving.files.append(runner_sock)
    except HarnessError as exc:  # runs still attach, each in its own process
        serving.runner_error = str(exc)
    state = run_dir / STATE_FILE
    runner = runner_sock if serving.runner is not None else None
    _write_private(state, json.dumps(_state(stack, sock, runner), indent=2) + "\n")
    serving.files.insert(0, state)
    return serving


def _warm_runner(stack: Stack, sock: Path) -> ManagedProcess:
    """The preloaded interpreter that `run` hands runs to (harness.warm), serving before
    attach.json names it: a run started once `up` says so finds it."""
    argv = (sys.executable, "-m", "harness.warm.server", str(sock))
    runner = stack.run.process("warm-runner", argv, dict(os.environ), cwd=Path.cwd())
    runner.start()
    try:
        wait_ready(Readiness("the warm runner", sock.exists, runner), deadline_s=60)
    except HarnessError:
        runner.stop(grace_s=1.0)
        raise
    return runner


def serve_processes(sock: Path, owner: ProcessOwner) -> Serving:
    sock.unlink(missing_ok=True)
    server = _Server(str(sock), owner)
    server.server_bind()
    sock.chmod(0o600)  # before listening: only this user may drive the stack
    server.server_activate()
    thread = threading.Thread(target=server.serve_forever, name="attach-server", daemon=True)
    thread.start()
    return Serving(server, thread, [sock])


def _write_private(path: Path, text: str) -> None:
    # Secrets (DB password, API key): created 0600, never readable by others even briefly.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def _state(stack: Stack, sock: Path, runner_sock: Path | None) -> dict[str, Any]:
    assert stack.owner is not None  # checked by serve
    provider = stack.provider
    return {
        "run_id": stack.run.run_id,
        "run_dir": str(stack.run.run_dir),
        "owner_pid": os.getpid(),
        "reaper_pid": stack.run.reaper.pid,
        "socket": str(sock),
        **({} if runner_sock is None else {warm.STATE_KEY: str(runner_sock)}),
        "shape": config_shape(stack.config),
        "started_at": time.time(),
        "postgres": {
            "port": stack.postgres.port,
            "password": stack.postgres.password,
            "base_dir": str(stack.postgres.base_dir),
        },
        "redis": {"port": stack.redis.port},
        "toxiproxy": {"port": stack.toxiproxy_server.port},
        "provider": None
        if provider is None
        else {
            "port": provider.port,
            "control_port": provider.control_port,
            "settings": dataclasses.asdict(provider.settings),
        },
        "links": stack.links,
        "listen_ports": stack.listen_ports,
        "n8n": [
            {"name": p.name, "role": p.role, "http_port": p.http_port} for p in stack.n8n_processes
        ],
        "owner": dataclasses.asdict(stack.owner),
        "ledger_credential_id": stack.ledger_credential_id,
        "pids": {p.name: p.pid for p in stack.processes},
        "logs": {p.name: str(p.log_path) for p in stack.processes},
    }


def how_to_attach(run_dir: Path) -> str:
    return (
        "attach: `n8n-chaos run -k CASE` (or pytest) from this folder uses this stack; "
        f"or name it: `n8n-chaos run --attach {run_dir}` / pytest --n8n-attach {run_dir}; "
        "--no-attach starts a fresh stack"
    )


# -- the attacher's side -----------------------------------------------------------------
class OwnerClient:
    """Requests to the ``up`` process; one short connection per request, so threads (a
    fault's timer, the case) never wait on each other's slow stop."""

    def __init__(self, sock: Path, owner_pid: int) -> None:
        self.sock = sock
        self.owner_pid = owner_pid

    def call(self, op: str, name: str = "", timeout_s: float = 10.0, **extra: Any) -> Any:
        request = json.dumps({"op": op, "name": name, **extra}).encode() + b"\n"
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
        reply: dict[str, Any] = json.loads(line)
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

    def stop(self, keep_data: bool = False) -> None:
        """Detach: leave the stack healthy for the next run, close clients, unlock.
        Nothing is stopped: the stack is the owner's."""
        del keep_data
        with contextlib.suppress(Exception):
            self.toxiproxy.reset()
            self.revive()
            if self.provider is not None:
                self.provider.control.clear_faults()
                self.provider.restore_ttl()
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

    def deploy(self, workflow: dict[str, Any]) -> DeployedWorkflow:
        """Reuse the workflow already deployed with the same content; replace a changed one
        (same name) so its webhook path is free."""
        cache_path = self.owner_run_dir / DEPLOYED_FILE
        cache: dict[str, Any] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
        name = str(workflow.get("name"))
        digest = hashlib.sha256(json.dumps(workflow, sort_keys=True).encode()).hexdigest()
        known = cache.get(name)
        if known is not None and known["digest"] == digest and self._exists(known["id"]):
            return DeployedWorkflow(known["id"], name, known["webhook_url"], 0.0)
        if known is not None:
            self._unpublish(known["id"])
        deployed = super().deploy(workflow)
        cache[name] = {"digest": digest, "id": deployed.id, "webhook_url": deployed.webhook_url}
        _write_private(cache_path, json.dumps(cache, indent=2) + "\n")
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


def _read_state(run_dir: Path) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = json.loads((run_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state


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
        state = _read_state(state_file.parent)
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
    state = _read_state(run_dir)
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
    state = _read_state(chosen)
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
    _write_private(
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
        api=N8nApi(n8n["main"].base_url, owner.api_key),
        ledger_credential_id=str(state["ledger_credential_id"]),
        owner_state=state,
        lock=lock,
    )
    parts: list[PostgresServer | RedisServer | ToxiproxyServer | ProviderServer | N8nProcess]
    parts = [postgres, redis, toxi, *([provider] if provider else []), *n8n.values()]
    for part in parts:
        part.process = RemoteProcess(client, part.process.name, part.process.log_path, run_id)
    return stack


def _role(value: str) -> Role:
    if value not in ("main", "worker", "webhook"):
        raise AttachError(f"attach.json names an unknown n8n role {value!r}")
    return value  # type: ignore[return-value]
