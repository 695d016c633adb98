"""Wait for a real readiness signal with one deadline (mirakuru's model).

"The process died" is reported apart from "not ready yet", and both errors carry the tail
of the service's log so the user sees why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.errors import ServiceStartTimeout
from harness.stack.process import ManagedProcess

Probe = Callable[[], bool]


@dataclass(frozen=True)
class Readiness:
    """What to wait for: a probe that returns True once ready; exceptions mean 'not yet'."""

    what: str
    probe: Probe
    process: ManagedProcess | None = None


def wait_ready(readiness: Readiness, deadline_s: float, interval_s: float = 0.2) -> float:
    """Block until the probe passes; return the seconds it took. One deadline, no retries."""
    started = time.monotonic()
    last_error = "probe never passed"
    while True:
        if readiness.process is not None:
            readiness.process.ensure_running()
        try:
            if readiness.probe():
                return time.monotonic() - started
        except Exception as exc:  # noqa: BLE001 - any probe failure means "not yet"
            last_error = f"{type(exc).__name__}: {exc}"
        if time.monotonic() - started > deadline_s:
            tail = readiness.process.log_tail() if readiness.process is not None else ""
            raise ServiceStartTimeout(
                readiness.what,
                f"not ready after {deadline_s:.0f} s (last probe: {last_error}); raise the "
                f"deadline with --ready-timeout if this machine is slow",
                tail,
            )
        time.sleep(interval_s)  # a poll with a deadline, the readiness signal is the probe


def wait_all_ready(items: list[Readiness], deadline_s: float) -> dict[str, float]:
    """Wait for several services that start in parallel; return each one's time to ready."""
    started = time.monotonic()
    pending = {item.what: item for item in items}
    took: dict[str, float] = {}
    while pending:
        for what, item in list(pending.items()):
            remaining = deadline_s - (time.monotonic() - started)
            if item.process is not None:
                item.process.ensure_running()
            try:
                ready = item.probe()
            except Exception:  # noqa: BLE001 - not yet
                ready = False
            if ready:
                took[what] = time.monotonic() - started
                del pending[what]
            elif remaining <= 0:
                wait_ready(item, 0)  # raises the timeout with the diagnostics
        if pending:
            time.sleep(0.2)
    return took

