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

import contextlib
import time
from typing import TYPE_CHECKING, Any, ClassVar

from harness.errors import HarnessError
from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, checked, register, undetermined, vocabulary
from harness.findings.probes.recovery_after_commit import STATUSES
from harness.findings.window import hold_after_commit
from harness.findings.workflows import charge_workflow
from harness.findings.world import ProbeWorld, Sender

if TYPE_CHECKING:
    from harness.stack.stack import Stack

LATENCY_MS = 3_000  # main -> Redis, while the row is awaited
TOXIC = "probe_enqueue_latency"
ROW_S = 30.0  # the row shows (a few slowed Redis round trips come first)
SENDER_S = 30.0
SETTLE_S = 60.0  # after main is back: the row finishes, or anything runs it
FINISHED = ("success", "error", "crashed", "canceled")
SETTLE_WAIT = "the row to finish after main's restart"
RAN = {0: "charge never ran", 1: "charge ran once"}
NEEDLES = (
    "enqueue",
    "Enqueued execution",
    "recover",
    "crashed",
    "Redis",
    "Worker started execution",
    "Worker finished execution",
)


@register("main_kill_before_enqueue")
class MainKillBeforeEnqueue(ProbeBase):
    after_enqueue: ClassVar[bool] = False
    question = (
        "n8n main is SIGKILLed after it wrote a synchronous webhook's execution row and "
        "before its job reached Redis: is the execution lost, run, or recovered, and what "
        "does the sender see?"
    )
    answers = vocabulary(
        "row ends {status}; {ran}; sender {sender}",
        status=STATUSES,
        ran=("charge never ran", "charge ran once", "charge ran twice or more"),
        sender=("got 200", "got 500", "got another status", "got no answer"),
    )

    def workflow(self) -> dict[str, Any]:
        return charge_workflow(self.name or "main_kill_before_enqueue", "probe-enqueue-KEY")

    def run(self, stack: Stack) -> Answer:
        with ProbeWorld(stack, "enqueue") as world:
            world.deploy(charge_workflow(self.name, f"probe-{world.key}"))
            struck = self._strike(world)
            if isinstance(struck, str):
                return undetermined(struck, world.evidence(NEEDLES))
            execution, sender, observed = struck
            world.wait_for("the sender's answer", sender.done, SENDER_S)
            world.wait_for(
                SETTLE_WAIT,
                lambda: world.status(execution) in FINISHED and len(world.commits()) > 0,
                SETTLE_S,
            )
            observed |= {"worker_starts": world.worker_starts(execution)}
            evidence = world.evidence(
                NEEDLES, execution=execution, sender=sender.result, observed=observed
            )
            return checked(self, self.judge(evidence))

    def _strike(self, world: ProbeWorld) -> tuple[str, Sender, dict[str, Any]] | str:
        """(the execution, its sender, what only the run saw) with main killed and back; or
        why the window was not reached (main is running again either way)."""
        stack, main = world.stack, world.stack.main
        link = stack.proxies["main_redis"]
        # Every command main sends to Redis arrives LATENCY_MS late: main writes the row
        # (after its cached look-ups, each as slow), then its add of the job is on the wire
        # for LATENCY_MS. (Cutting the link instead stops main before the row: the webhook
        # path reads Redis first.)
        link.add_toxic("latency", stream="upstream", name=TOXIC, latency=LATENCY_MS)
        world.timeline.record("main_redis slowed", latency_ms=LATENCY_MS)
        killed_at_ms: float | None = None
        try:
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
            jobs_at_kill = [j for j in world.bull_jobs() if j.get("execution") == execution]
        finally:
            with contextlib.suppress(HarnessError):
                link.remove_toxic(TOXIC)
            link.enable()
            world.timeline.record("main_redis healed")
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
        path = ev.status_path(evidence, execution)
        commits = ev.commit_count(evidence)
        sender = ev.sender_seen(evidence.get("sender"))
        facts = {
            "execution": execution,
            "status_path": path,
            "commits": commits,
            "attempts": ev.attempt_count(evidence),
            "worker_starts": seen.get("worker_starts"),
            "jobs_at_kill": seen.get("jobs_at_kill"),
            "executions": len(ev.rows(evidence)),
            "sender": sender,
            "kill_proof": seen.get("kill_proof"),
        }
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
        ran = RAN.get(commits, "charge ran twice or more")
        final = ev.final_status(evidence, execution)
        answer = f"row ends {final}; {ran}; sender {sender}"
        why = (
            f"execution {execution} went {' -> '.join(path) or '(no status seen)'}; "
            f"{commits} commit(s), {facts['worker_starts']} worker start(s), "
            f"{facts['executions']} execution row(s); the sender {sender}"
        )
        return Answer(answer, why, facts, evidence)


@register("main_kill_after_enqueue")
class MainKillAfterEnqueue(MainKillBeforeEnqueue):
    after_enqueue = True
    question = (
        "n8n main is SIGKILLed while a worker runs a synchronous webhook's execution (the "
        "charge committed, its response held): what status does the row end in, does "
        "anything run it again, and what does the sender see?"
    )

    def _strike(self, world: ProbeWorld) -> tuple[str, Sender, dict[str, Any]] | str:
        main = world.stack.main
        held = hold_after_commit(world)
        if isinstance(held, str):
            return held
        _, kill_proof = world.kill(main)
        held.release(world)
        world.restart(main)
        return held.execution_id, held.sender, {"kill_proof": kill_proof, "jobs_at_kill": None}
