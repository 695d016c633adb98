"""main_kill_before_enqueue / main_kill_after_enqueue: n8n main is SIGKILLed around the
enqueue of a synchronous webhook's execution (Webhook answered by its last node -> Charge).

In queue mode main first writes the execution row (``ActiveExecutions.add``, status
``new``), then adds the Bull job (``WorkflowRunner.enqueueExecution``) and holds the
caller's connection until a worker finished it.
- ``main_kill_before_enqueue``: main's commands to Redis are delayed (a Toxiproxy latency
  toxic upstream on ``main_redis``); the delivery is sent; once its row exists and Redis
  holds no job for it, main is SIGKILLed and the link closed at once (what it still
  delayed is dropped), then healed and main restarted; a job of the killed main's that
  reached Redis anyway (added before the kill, by its own timestamp) voids the strike;
- ``main_kill_after_enqueue``: the job ran and the provider holds the committed charge's
  response; main is SIGKILLed, the response released, main restarted.
Answer: the row's final status, how often the charge ran, and what the sender got.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, register, undetermined, vocabulary
from harness.findings.window import hold_after_commit
from harness.findings.world import FINISHED as FINISHED  # webhook_redis_cut's, redis_silent's
from harness.findings.world import WORKER_LINES, ProbeWorld, Sender

if TYPE_CHECKING:
    from harness.stack.stack import Stack

LATENCY_MS = 3_000  # main -> Redis, while the row is awaited
TOXIC = "probe_enqueue_latency"
ROW_S = 30.0  # the row shows (a few slowed Redis round trips come first)
SENDER_S = 30.0
SETTLE_S = 60.0  # after main is back: the row finishes, or anything runs it
SETTLE_WAIT = "the row to finish after main's restart"
# What a probe struck: (the execution, its sender, what only the run saw); or why not.
Struck = tuple[str, Sender, dict[str, Any]] | str


@register("main_kill_before_enqueue")
class MainKillBeforeEnqueue(ProbeBase):
    after_enqueue: ClassVar[bool] = False
    question = (
        "n8n main is SIGKILLed after it wrote a synchronous webhook's execution row and "
        "before its job reached Redis: is the execution lost, run, or recovered, and what "
        "does the sender see?"
    )
    answers = vocabulary("row ends {status}; {ran}; sender {sender}", **ev.RUN_WORDS)
    short = "enqueue"
    needles = ("enqueue", "Enqueued execution", "recover", "crashed", "Redis", *WORKER_LINES)

    def run(self, stack: Stack) -> Answer:
        with self.world(stack) as world:
            struck = self._strike(world)
            if isinstance(struck, str):
                return self.missed(world, struck)
            execution, sender, observed = struck
            world.wait_for("the sender's answer", sender.done, SENDER_S)
            world.wait_for(
                SETTLE_WAIT,
                lambda: world.status(execution) in FINISHED and len(world.commits()) > 0,
                SETTLE_S,
            )
            observed |= {"worker_starts": world.worker_starts(execution)}
            return self.answered(
                world, execution=execution, sender=sender.result, observed=observed
            )

    def _strike(self, world: ProbeWorld) -> Struck:
        """(the execution, its sender, what only the run saw) with main killed and back; or
        why the window was not reached (main is running again either way)."""
        stack, main = world.stack, world.stack.main
        link = stack.proxies["main_redis"]
        killed_at_ms: float | None = None
        # Every command main sends to Redis arrives LATENCY_MS late: main writes the row
        # (after its cached look-ups, each as slow), then its add of the job is on the wire
        # for LATENCY_MS. (Cutting the link instead stops main before the row: the webhook
        # path reads Redis first.)
        with world.slowed(link, TOXIC, LATENCY_MS, "healed"):
            sender = world.send()
            execution = world.row_without_job(ROW_S)
            if execution is None:
                return f"no execution row without a Bull job within {ROW_S:.0f} s"
            world.timeline.record("SIGKILL", process=main.name, pid=main.pid)
            main.kill()
            killed_at_ms = time.time() * 1000
            # Closing the link drops what main had sent that Toxiproxy still delays.
            link.disable()
            kill_proof = main.process.kill_proof()
            jobs_at_kill = world.jobs_of(execution)
        world.restart(main)
        return (
            execution,
            sender,
            {"kill_proof": kill_proof, "jobs_at_kill": jobs_at_kill, "killed_at_ms": killed_at_ms},
        )

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        seen = ev.observed(evidence)
        execution = evidence.get("execution")
        facts = ev.facts(
            evidence,
            *("execution", "status_path", "commits", "attempts", "worker_starts"),
            *("jobs_at_kill", "executions", "sender", "kill_proof"),
        )
        if not facts["kill_proof"]:
            return undetermined("main did not end by SIGKILL", evidence)
        if not self.after_enqueue and seen.get("jobs_at_kill"):
            return undetermined("the job was in Redis when main was killed", evidence)
        killed_at_ms = seen.get("killed_at_ms")
        late = [
            j
            for j in evidence.get("bull_jobs") or []
            if j.get("execution") == execution
            and killed_at_ms is not None
            and j.get("added_at_ms") is not None
            and float(j["added_at_ms"]) < float(killed_at_ms)
        ]
        if not self.after_enqueue and late:
            return undetermined(
                "the killed main's enqueue still reached Redis (a job added before the kill)",
                evidence,
            )
        final = ev.final_status(evidence, execution)
        answer = f"row ends {final}; {ev.charge_ran(facts['commits'])}; sender {facts['sender']}"
        why = ev.course(facts, "commits", "worker_starts", "executions")
        return Answer(answer, f"{why}; the sender {facts['sender']}", facts, evidence)


@register("main_kill_after_enqueue")
class MainKillAfterEnqueue(MainKillBeforeEnqueue):
    after_enqueue = True
    question = (
        "n8n main is SIGKILLed while a worker runs a synchronous webhook's execution (the "
        "charge committed, its response held): what status does the row end in, does "
        "anything run it again, and what does the sender see?"
    )

    def _strike(self, world: ProbeWorld) -> Struck:
        main = world.stack.main
        held = hold_after_commit(world)
        if isinstance(held, str):
            return held
        _, kill_proof = world.kill(main)
        held.release(world)
        world.restart(main)
        return held.execution_id, held.sender, {"kill_proof": kill_proof, "jobs_at_kill": None}
