"""wait_resume: the plan of a workflow that parks at a Wait node until its resume URL is
called (an approval link, a payment provider's callback).

The event is delivered, then delivered again (the sender's at-least-once redelivery), each
retried until definite; every resume URL the answers handed out is called twice at once (the
callback, redelivered), and, once everything settled, once more (a late redelivery of the
callback). Each resume call is one attempt in the sender's history. A workflow that keeps
its promise commits once: a second parked execution must not charge again. The faults: none,
a worker crash once the resumed charge committed, or (named in the workflow's manifest,
``production_faults``) a link fault then: the provider's link gone silent, the worker's Redis.

The workflow hands its resume URL out in its answer (``$execution.resumeUrl`` in a Respond to
Webhook node before the Wait): the harness reads ``.../webhook-waiting/<execution>...`` from
the answers' bodies, and calls it only on this machine.

Proof: n8n's own rows showed each execution ``waiting`` before its URL was called, and n8n's
HTTP answers to the calls. Findings (probes ``wait_resume_concurrent``/``_sequential``, n8n
2.33.7 and 2.40.7): n8n runs a parked execution once however often its URL is called (the
loser of two calls at once gets 500, a call once it ran 409 or 401).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, ClassVar

import httpx

from harness.engine.deliveries.base import Plan, register, release_together
from harness.stack.intercept.config import LOOPBACK_HOSTS

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery, DeliveryAttempt

# ``{N8N_WEBHOOK_URL}webhook-waiting/{execution id}[?signature=...]``, as n8n builds it.
RESUME_URL = re.compile(r"https?://[^\s\"'<>\\]+/webhook-waiting/(\d+)[^\s\"'<>\\]*")
PARK_S = 60.0  # an execution parks as waiting once its first nodes ran
BARRIER_S = 30.0


def resume_urls(answers: Iterable[str]) -> dict[str, str]:
    """Execution id -> its resume URL, from the answers' bodies (the first one seen wins)."""
    found: dict[str, str] = {}
    for text in answers:
        for match in RESUME_URL.finditer(text.replace("\\/", "/")):
            found.setdefault(match.group(1), match.group(0))
    return found


@register("wait_resume")
class WaitResume(Plan):
    offers = frozenset({"resumes_waits"})
    # A crash, or a link fault (opt-in per workflow), once the resumed charge committed.
    accepts = (
        frozenset({"quiet"}),
        frozenset({"worker_crash", "committed"}),
        frozenset({"link_toxic", "committed"}),
    )
    shares_stack = True  # the case's own deliveries (and barrier) only
    needs = frozenset({"wait_resume"})
    resends = True
    copies: ClassVar[int] = 2  # calls of each resume URL released together

    def __init__(self) -> None:
        super().__init__()
        self.urls: dict[str, str] = {}
        self.waiting: list[str] = []  # the executions n8n's rows showed parked
        self.calls: list[DeliveryAttempt] = []

    def start(self, run: CaseWorld) -> BackgroundDelivery:
        return run.start_work(lambda: self._deliver_and_resume(run))

    def after_settle(self, run: CaseWorld) -> bool:
        if not self.waiting:
            return False  # nothing parked: nothing to call again (and no proof)
        self._call_each(run, "late resume", copies=1)
        self.fact = (
            f"n8n's rows showed execution(s) {', '.join(self.waiting)} waiting before their "
            f"resume URLs were called; n8n answered the calls "
            f"{', '.join(f'{a.delivery}: {a.status}' for a in self.calls)}"
        )
        return True

    def _deliver_and_resume(self, run: CaseWorld) -> None:
        answers = [run.deliver(delivery="d1"), run.deliver(delivery="redelivery")]
        found = resume_urls(a.detail for a in run.attempts())
        self.urls = {e: url for e, url in found.items() if _on_this_machine(url)}
        if len(self.urls) < len(found):
            run.journal.record(
                "delivery.resume", "resume URL not on this machine: not called", urls=found
            )
        if not self.urls:
            run.journal.record(
                "delivery.resume",
                "no resume URL in the answers: the workflow answers $execution.resumeUrl "
                "before its Wait node, or nothing resumes it",
                answers=[a.detail[:300] for a in answers],
            )
            return
        for execution in self.urls:
            if run.wait_for(
                f"execution {execution} to park as waiting", _parked(run, execution), PARK_S
            ):
                self.waiting.append(execution)
        if self.waiting:
            self._call_each(run, "resume", copies=self.copies)

    def _call_each(self, run: CaseWorld, delivery: str, copies: int) -> None:
        """Every parked execution's URL, ``copies`` calls each, all released together."""
        targets = [self.urls[e] for e in self.waiting for _ in range(copies)]
        body = {"approved": True, "key": run.key}

        def call(url: str) -> None:
            self.calls.append(run.call(url, body, delivery))

        release_together([partial(call, url) for url in targets], BARRIER_S)


def _parked(run: CaseWorld, execution: str) -> Callable[[], bool]:
    """Whether n8n's row of ``execution`` says ``waiting``."""
    return lambda: any(
        str(e["id"]) == execution and e["status"] == "waiting" for e in run.executions()
    )


def _on_this_machine(url: str) -> bool:
    try:
        return httpx.URL(url).host in LOOPBACK_HOSTS
    except httpx.InvalidURL:
        return False
