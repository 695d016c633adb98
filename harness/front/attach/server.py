"""The owner's side of attach (what ``n8n-chaos up`` runs): serve the stack's process handles
on ``attach.sock``, start the warm runner, write ``attach.json``."""

from __future__ import annotations

import dataclasses
import json
import os
import socketserver
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import AttachError, HarnessError
from harness.front.attach.protocol import (
    STATE_FILE,
    config_shape,
    decode,
    encode,
    socket_path,
    write_private,
)
from harness.front.warm import protocol as warm
from harness.stack.process import ManagedProcess
from harness.stack.readiness import Readiness, wait_ready
from harness.stack.stack import Stack


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
            reply = self.server.owner.answer(decode(line))
            self.wfile.write(encode(reply))
            self.wfile.flush()


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, owner: ProcessOwner) -> None:
        self.owner = owner
        super().__init__(path, _Handler, bind_and_activate=False)


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
    (harness.front.warm), write ``attach.json``."""
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
    write_private(state, json.dumps(_state(stack, sock, runner), indent=2) + "\n")
    serving.files.insert(0, state)
    return serving


def _warm_runner(stack: Stack, sock: Path) -> ManagedProcess:
    """The preloaded interpreter that `run` hands runs to (harness.front.warm), serving before
    attach.json names it: a run started once `up` says so finds it."""
    argv = (sys.executable, "-m", "harness.front.warm.server", str(sock))
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
        # The intercepting proxy's files and listeners: an attached run sets its host map
        # and reads its journal (the owner's proxy; no second one is started).
        "intercept": None if stack.intercept is None else stack.intercept.config.as_dict(),
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
