"""concurrent: N identical deliveries released together (a barrier), each retried.

n8n's main takes webhooks one at a time: on a loaded machine it queues a quick workflow's copies
so far apart that each has ended before the next starts, and no guard is raced. So a case alone
on its stack (a retry after an unproven window runs alone) holds the workers until n8n has made
an execution of every copy, as a backlog does, and they are picked up together.

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
# How long the workers may stay held while n8n takes the copies in (it takes a few hundred
# ms); past it they go on, and the proof decides.
QUEUE_DEADLINE_S = 5.0


@register("concurrent")
class Concurrent(QuietResend):
    repeat = 5

    def __init__(self) -> None:
        super().__init__()
        self.run: CaseWorld | None = None

    def start(self, run: CaseWorld) -> BackgroundDelivery:
        self.run = run
        run.journal.record("delivery.concurrent", "copies", copies=COPIES)
        with run.workers_held() as held:
            sending = run.start_concurrent(COPIES)
            if held:
                run.wait_for(
                    f"an execution of each of the {COPIES} copies",
                    lambda: len(run.executions()) >= COPIES,
                    QUEUE_DEADLINE_S,
                    give_up=lambda: sending.done,
                )
        return sending

    def proof(self) -> str | None:
        if self.run is None:
            return None
        rows = self.run.executions()
        overlap = max_overlap(rows)
        if overlap < 2:
            return None
        return f"n8n's rows show {overlap} of {len(rows)} executions running at one instant"
