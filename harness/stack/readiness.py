"""Wait for a real readiness signal with one deadline (mirakuru's model).

"The process died" is reported apart from "not ready yet", and both errors carry the tail
of the service's log so the user sees why. A probe that raises a HarnessError has found a
definite problem (e.g. a failed publication) and stops the wait at once; any other
exception from a probe means "not yet".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from harness.errors import HarnessError, ServiceStartTimeout
from harness.stack.process import ManagedProcess

Probe = Callable[[], bool]
POLL_INTERVAL_S = 0.2


@dataclass(frozen=True)
class Readiness:
    """What to wait for: a probe that returns True once ready; exceptions mean 'not yet'."""

    what: str
    probe: Probe
    process: ManagedProcess | None = None
    not_yet: str = "probe returned false"  # what a False from the probe means, for the user

    def check(self) -> tuple[bool, str]:
        """One probe: (ready, why not). Raises if the process died or the probe found a fault."""
        if self.process is not None:
            self.process.ensure_running()
        try:
            return self.probe(), self.not_yet
        except HarnessError:
            raise
        except Exception as exc:  # any other probe failure means "not yet"
            return False, f"{type(exc).__name__}: {exc}"

    def timeout(self, deadline_s: float, last: str) -> ServiceStartTimeout:
        tail = self.process.log_tail() if self.process is not None else ""
        last = " ".join(last.split())  # one line: a driver's message may span several
        return ServiceStartTimeout(
            self.what,
            f"not ready after {deadline_s:.0f} s (last probe: {last}); raise the deadline "
            "(--ready-timeout / --n8n-ready-timeout) if this machine is slow",
            tail,
        )


class Service(Protocol):
    """A part of the stack: one process and how to tell it is ready."""

    @property
    def process(self) -> ManagedProcess: ...

    def readiness(self) -> Readiness: ...


def wait_ready(
    readiness: Readiness, deadline_s: float, interval_s: float = POLL_INTERVAL_S
) -> float:
    """Block until the probe passes; return the seconds it took."""
    return wait_all_ready([readiness], deadline_s, interval_s)[readiness.what]


def wait_all_ready(
    items: list[Readiness], deadline_s: float, interval_s: float = POLL_INTERVAL_S
) -> dict[str, float]:
    """Wait for several services that start in parallel; return each one's time to ready."""
    started = time.monotonic()
    pending = {item.what: item for item in items}
    took: dict[str, float] = {}
    while True:
        for what, item in list(pending.items()):
            ready, why_not = item.check()
            if ready:
                took[what] = time.monotonic() - started
                del pending[what]
            elif time.monotonic() - started > deadline_s:
                raise item.timeout(deadline_s, why_not)
        if not pending:
            return took
        time.sleep(interval_s)  # a poll with a deadline; the readiness signal is the probe
