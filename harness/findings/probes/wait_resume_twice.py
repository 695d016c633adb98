"""wait_resume_concurrent / wait_resume_sequential: a Wait node's resume URL is called twice.

The workflow (``harness.findings.workflows.wait_resume_workflow``): Webhook -> Respond to
Webhook (answers ``$execution.resumeUrl``) -> Wait ("On Webhook Call", POST, answered on
receipt) -> Charge (the effect: one provider commit per run). The sender's delivery parks the
execution as ``waiting``; the harness then POSTs the resume URL twice:
- ``wait_resume_concurrent``: both calls lined up on a thread barrier (in flight together);
- ``wait_resume_sequential``: the second call once the first resumed run has finished.

What n8n 2.40.7's code says (packages/cli ``webhooks/waiting-webhooks.ts``): the resume URL
is ``{N8N_WEBHOOK_URL}webhook-waiting/{executionId}?signature={resumeToken}``; a call reads
the execution and refuses it with 409 when its row is ``running`` or finished; else
``WorkflowRunner.run`` moves the row from ``waiting`` to ``running`` with a conditional
update (``requireStatus: 'waiting'``), and a call that loses that update throws
``ExecutionAlreadyResumingError``. The probe measures what that gives: how many charges the
resumed runs committed, and what HTTP status each resume call got.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar

from harness import loopback
from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, undetermined, vocabulary
from harness.findings.workflows import wait_resume_workflow
from harness.findings.world import FINISHED, WORKER_LINES, ProbeWorld

if TYPE_CHECKING:
    from harness.stack.stack import Stack

SEND_S = 60.0  # the first delivery is answered with the resume URL
WAITING_S = 60.0  # the execution parks as waiting
RESUME_CALL_S = 60.0
FINISH_S = 60.0  # the resumed run finishes
SECOND_RUN_S = 15.0  # after it finished: time for a second resumed run to charge again
FINISH_WAIT = "the resumed execution to finish"
# What a resume call got: the statuses n8n answers a resume URL with, named (401: the
# signature no longer matches; 404: no waiting-webhook route yet; 409: running or finished).
CALL_WORDS = ("200", "401", "404", "409", "500", "another status", "no answer")
PAIRS = tuple(f"{a} and {b}" for a, b in itertools.combinations_with_replacement(CALL_WORDS, 2))
# What a resume probe's judge reads first: the execution (seen waiting), its status path
# and the resume calls made.
Waited = tuple[str | None, list[str], list[dict[str, Any]]]
NEEDLES = ("waiting-webhook", "already being resumed", "is running already", "has finished")


def call_word(call: dict[str, Any]) -> str:
    status = call.get("status")
    if status is None:
        return "no answer"
    return str(status) if str(status) in CALL_WORDS else "another status"


class WaitResumeProbe(ProbeBase):
    """A probe of a Wait node (On Webhook Call) resumed through its URL: it deploys
    ``wait_resume_workflow``, its run parks the execution (``_parked``) and then ``resume``s
    it, and its judge asks first that the execution was seen waiting."""

    needles: ClassVar[tuple[str, ...]] = (*NEEDLES, *WORKER_LINES)

    def build(self, path: str) -> dict[str, Any]:
        return wait_resume_workflow(self.name, path)

    def workflow(self) -> dict[str, Any]:
        return self.build("probe-wait-KEY")

    def run(self, stack: Stack) -> Answer:
        with self.world(stack) as world:
            parked = _parked(world)
            if isinstance(parked, str):
                return self.missed(world, parked)
            return self.resume(world, *parked)

    def resume(self, world: ProbeWorld, execution: str, url: str, sent: dict[str, Any]) -> Answer:
        """Strike once ``execution`` is parked (``url``: its resume URL; ``sent``: what the
        first delivery got) and answer."""
        raise NotImplementedError

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``):
        UNDETERMINED unless the execution was seen waiting, else ``judge_resumed``'s."""
        execution = evidence.get("execution")
        path = ev.status_path(evidence, execution)
        if "waiting" not in path:
            return undetermined(f"execution {execution} was never seen waiting", evidence)
        calls: list[dict[str, Any]] = list(evidence.get("resume_calls") or [])
        return self.judge_resumed(evidence, (execution, path, calls))

    def judge_resumed(self, evidence: dict[str, Any], waited: Waited) -> Answer:
        """The answer for an execution seen waiting."""
        raise NotImplementedError


def _parked(world: ProbeWorld) -> tuple[str, str, dict[str, Any]] | str:
    sender = world.send()
    if not world.wait_for("the first delivery's answer", sender.done, SEND_S):
        return f"the first delivery got no answer within {SEND_S:.0f} s"
    try:
        body = json.loads(sender.result.get("body") or "")
        execution, resume_url = str(body["execution"]), str(body["resumeUrl"])
    except (ValueError, KeyError, TypeError):  # not JSON, or not the Respond node's
        return f"the first delivery's answer carries no resume URL: {sender.result}"
    world.timeline.record("resume URL known", execution=execution, url=resume_url)
    if not world.wait_for(
        "the execution to park as waiting",
        lambda: world.status(execution) == "waiting",
        WAITING_S,
    ):
        return f"execution {execution} was not seen waiting within {WAITING_S:.0f} s"
    return execution, resume_url, dict(sender.result)


class WaitResumeTwice(WaitResumeProbe):
    sequential: ClassVar[bool] = False  # the case (below): the 2nd call awaits the 1st run
    answers = vocabulary(
        "{charges} charge(s); the resume calls got {pair}", charges=ev.COUNTS, pair=PAIRS
    )
    short = "wait"

    def resume(self, world: ProbeWorld, execution: str, url: str, sent: dict[str, Any]) -> Answer:
        calls = self._resume_twice(world, execution, url)
        world.wait_finished(FINISH_WAIT, execution, FINISH_S)
        world.wait_for(
            "a second resumed run to charge", lambda: len(world.commits()) > 1, SECOND_RUN_S
        )
        observed = {"sequential": self.sequential, "resume_url": url}
        return self.answered(
            world, execution=execution, sender=sent, resume_calls=calls, observed=observed
        )

    def _resume_twice(self, world: ProbeWorld, execution: str, url: str) -> list[dict[str, Any]]:
        calls: list[dict[str, Any]] = [{}, {}]
        line_up = threading.Barrier(1 if self.sequential else 2, timeout=RESUME_CALL_S)

        def resume(slot: int) -> None:
            try:
                line_up.wait()
                calls[slot]["sent_at"] = world.timeline.now()
                response = loopback.post(url, json={"resume": slot}, timeout=RESUME_CALL_S)
                calls[slot] |= {"status": response.status_code, "body": response.text[:300]}
            except Exception as exc:  # what the caller saw is evidence, never raised
                calls[slot] |= {"status": None, "error": f"{type(exc).__name__}: {exc}"[:300]}
            finally:
                calls[slot]["answered_at"] = world.timeline.now()
                world.timeline.record(
                    "resume call answered", slot=slot, status=calls[slot].get("status")
                )

        if self.sequential:
            resume(0)
            world.wait_finished(FINISH_WAIT, execution, FINISH_S)
            calls[1]["after_finish"] = world.status(execution) in FINISHED
            resume(1)
            return calls
        threads = [threading.Thread(target=resume, args=(i,), daemon=True) for i in (0, 1)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + RESUME_CALL_S * 2
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return calls

    def judge_resumed(self, evidence: dict[str, Any], waited: Waited) -> Answer:
        calls = waited[2]
        seen = ev.observed(evidence)
        commits = ev.commit_count(evidence)
        words = sorted((call_word(c) for c in calls), key=CALL_WORDS.index)
        facts = {
            "sequential": bool(seen.get("sequential")),
            **ev.facts(evidence, "execution", "status_path", "final_status", "executions"),
            "commits": commits,
            "resume_statuses": [c.get("status") for c in calls],
            "calls_overlapped": ev.overlapped(calls),
        }
        if len(calls) != 2 or any("sent_at" not in c for c in calls):
            return undetermined("the two resume calls were not both sent", evidence)
        if facts["sequential"] and not calls[1].get("after_finish"):
            return undetermined(
                "the first resumed run had not finished before the second call", evidence
            )
        if not facts["sequential"] and not facts["calls_overlapped"]:
            return undetermined("the two resume calls did not overlap in time", evidence)
        pair = " and ".join(words)
        answer = f"{ev.count_word(commits)} charge(s); the resume calls got {pair}"
        why = (
            f"{ev.course(facts)}; resumed "
            f"{'in sequence' if facts['sequential'] else 'by two calls at once'}, the calls got "
            f"HTTP {facts['resume_statuses']}; the provider committed {commits} charge(s); "
            f"{facts['executions']} execution row(s)"
        )
        return Answer(answer, why, facts, evidence)


WaitResumeTwice.register_case(
    "wait_resume_concurrent",
    "A Wait node (On Webhook Call) is resumed by two calls of its resume URL at once: "
    "how many times does the step after it commit, and what does each call get?",
)
WaitResumeTwice.register_case(
    "wait_resume_sequential",
    "A Wait node (On Webhook Call) is resumed, and its resume URL called again once the "
    "resumed run finished: how many times does the step after it commit, and what does "
    "each call get?",
    sequential=True,
)
