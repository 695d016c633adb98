"""A stack part running as a container, with the handle of a native process.

``kill`` sends SIGKILL to the container (its init dies, the kernel ends the rest of its pid
namespace), ``pause`` freezes its cgroup (docker pause), ``start`` starts the same container
again (its filesystem and volumes kept, as a restarted process keeps its data dir). What the
container prints is copied as it comes into the run's log file, so readers of a process log
(the worker that ran an execution, n8n's messages during a case) work unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docker.errors import APIError, NotFound
from docker.models.containers import Container

from harness.errors import ServiceExited
from harness.stack.docker.engine import client
from harness.stack.process import ManagedProcess

SIGKILL_EXIT = 128 + 9  # how docker reports a container whose init died of SIGKILL
_FOLLOW_JOIN_S = 5.0
PAUSE_ATTEMPTS = 3  # a docker pause that runc could not freeze is asked again, this often


class _NoGroups:
    """Containers are not process groups of ours: the reaper ends them by label instead."""

    def started(self, pgid: int) -> None:
        del pgid

    def ended(self, pgid: int) -> None:
        del pgid


@dataclass
class ContainerProcess(ManagedProcess):
    """The container ``container_name``; created by the compose project, started here."""

    container_name: str = ""
    _follower: threading.Thread | None = field(default=None, init=False, repr=False)

    @classmethod
    def make(cls, name: str, container_name: str, log_path: Path, run_id: str) -> ContainerProcess:
        return cls(
            name=name,
            argv=(),
            env={},
            log_path=log_path,
            run_id=run_id,
            registry=_NoGroups(),
            container_name=container_name,
        )

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        if self.running:
            return
        with self._start_log(f"container {self.container_name}"):
            pass  # the container's own output is appended by the log follower
        since = time.time()
        self._container().start()
        self._follow(since)

    def stop(self, grace_s: float = 10.0) -> None:
        container = self._existing()
        if container is None:
            return
        self._unpause(container)  # a frozen container cannot act on SIGTERM
        with contextlib.suppress(APIError):
            container.stop(timeout=max(1, int(grace_s)))
        self._ended()

    def kill(self) -> None:
        container = self._existing()
        if container is None:
            return
        with contextlib.suppress(APIError):  # already dead: nothing to kill
            container.kill(signal="SIGKILL")
        with contextlib.suppress(APIError):
            container.wait(timeout=30)
        self._ended()

    def pause(self) -> None:
        container = self._container()
        # runc gives up freezing a cgroup whose tasks do not stop in time ("unable to freeze"),
        # as on a starved machine, and thaws it again: the pause did not happen, so ask again.
        for attempt in range(1, PAUSE_ATTEMPTS + 1):
            try:
                container.pause()
                break
            except APIError as exc:
                if "unable to freeze" not in str(exc) or attempt == PAUSE_ATTEMPTS:
                    raise
        self.paused = True

    def resume(self) -> None:
        container = self._existing()
        if container is not None:
            self._unpause(container)
        self.paused = False

    # -- state ------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        state = self._state()
        return int(state["Pid"]) if state.get("Running") else None

    @property
    def running(self) -> bool:
        return bool(self._state().get("Running"))

    @property
    def returncode(self) -> int | None:
        state = self._state()
        if not state or state.get("Running") or state.get("Status") == "created":
            return None
        return int(state.get("ExitCode", 0))

    def ensure_running(self) -> None:
        code = self.returncode
        if code is not None:
            raise ServiceExited(self.name, f"container exited with code {code}", self.log_tail())

    def kill_proof(self) -> str | None:
        state = self._state()
        if state.get("Running") or state.get("ExitCode") != SIGKILL_EXIT or state.get("OOMKilled"):
            return None
        return f"{self.name} exited {SIGKILL_EXIT} = 128+SIGKILL, not OOM (docker inspect)"

    def pause_proof(self) -> str | None:
        state = self._state()
        if not state.get("Paused"):
            return None
        freezer = _freezer_state(int(state.get("Pid") or 0))
        return f"{self.name} paused (docker inspect), cgroup freezer {freezer or 'unreadable'}"

    # -- internals ----------------------------------------------------------------------
    def _container(self) -> Container:
        return client().containers.get(self.container_name)

    def _existing(self) -> Container | None:
        try:
            return self._container()
        except NotFound:
            return None

    def _state(self) -> dict[str, Any]:
        container = self._existing()
        if container is None:
            return {}
        state: dict[str, Any] = container.attrs.get("State", {})
        return state

    def _unpause(self, container: Container) -> None:
        if container.attrs.get("State", {}).get("Paused"):
            container.unpause()
        self.paused = False

    def _ended(self) -> None:
        self.paused = False
        self.last_returncode = self.returncode
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.join(_FOLLOW_JOIN_S)  # the stream ends with the container

    def _follow(self, since: float) -> None:
        """Copy the container's output since ``since`` into the log file until it stops."""
        container = self._container()

        def copy() -> None:
            with contextlib.suppress(Exception), self.log_path.open("ab") as log:
                for chunk in container.logs(stream=True, follow=True, since=since):
                    log.write(chunk)
                    log.flush()

        self._follower = threading.Thread(target=copy, name=f"logs-{self.name}", daemon=True)
        self._follower.start()


def _freezer_state(pid: int) -> str | None:
    """The cgroup freezer's own word on the container's init (v1: FROZEN; v2: frozen=1)."""
    if pid <= 0:
        return None
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "freezer":
            state = Path(f"/sys/fs/cgroup/freezer{path}/freezer.state")
            with contextlib.suppress(OSError):
                return state.read_text().strip()
        if controllers == "":
            frozen = Path(f"/sys/fs/cgroup{path}/cgroup.freeze")
            with contextlib.suppress(OSError):
                return "frozen" if frozen.read_text().strip() == "1" else "thawed"
    return None
