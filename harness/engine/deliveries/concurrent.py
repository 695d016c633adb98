"""concurrent: N identical deliveries released together (a barrier), each retried.

Proof, from n8n's execution rows: at least two of the case's executions ran at the same
time (their running intervals overlap). Repeated by default: a read-then-insert race is
lost only on some runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.engine.deliveries.base import QuietResend, max_overlap, register

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery

COPIES = 5


@register("concurrent")
class Concurrent(QuietResend):
    repeat = 5

    def __init__(self) -> None:
        super().__init__()
        self.run: CaseWorld | None = None

    def start(self, run: CaseWorld) -> BackgroundDelivery:
        self.run = run
        run.journal.record("delivery.concurrent", "copies", copies=COPIES)
        return run.start_concurrent(COPIES)

    def proof(self) -> str | None:
        if self.run is None:
            return None
        rows = self.run.executions()
        overlap = max_overlap(rows)
        if overlap < 2:
            return None
        return f"n8n's rows show {overlap} of {len(rows)} executions running at one instant"
