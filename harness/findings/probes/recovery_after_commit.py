"""recovery_after_commit: the provider committed the charge, and the worker running the
execution is SIGKILLed before it could write the result back.

Strike: the provider holds the committed charge's response (barrier at ``committed``); the
worker running the execution is SIGKILLed; the response is released into the dead socket.
Then the surviving worker alone is watched until the row leaves new/running (Bull's stall
sweep and main's error path), then the killed worker is restarted (its event-log recovery
runs at start) and the stack is watched for a re-run: a new execution of the workflow, a
second "Worker started execution N", or a second charge attempt at the provider.
The answer is the row's final status and whether anything re-ran the execution.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, register, undetermined, vocabulary
from harness.findings.evidence import STATUSES as STATUSES  # webhook_redis_cut's, redis_silent's
from harness.findings.window import Held
from harness.findings.world import WORKER_LINES, ProbeWorld

if TYPE_CHECKING:
    from harness.stack.stack import Stack

SENDER_S = 30.0
RERUN_S = 20.0  # after the killed worker is back: time for any recovery to re-run it
RERUN_WAIT = "anything to re-run the execution"


@register("recovery_after_commit")
class RecoveryAfterCommit(ProbeBase):
    question = (
        "An execution's charge committed at the provider and its worker was SIGKILLed "
        "before writing back: what status does n8n leave it in, and does anything re-run it?"
    )
    answers = vocabulary("{status}; {rerun}", status=STATUSES, rerun=("re-run", "not re-run"))
    short = "recovery"
    needles = ("stalled", "crashed", "recover", "Missing lock", *WORKER_LINES)

    def run(self, stack: Stack) -> Answer:
        return self.run_held(stack, self._strike)

    def _strike(self, world: ProbeWorld, held: Held) -> Answer:
        execution, victim = held.execution_id, world.stack.workers[held.worker]
        killed_at, kill_proof, status_after_kill = held.kill_worker(world)
        world.wait_for("the sender's answer", held.sender.done, SENDER_S)
        world.restart(victim)
        world.wait_for(RERUN_WAIT, lambda: world.reran(execution, world.attempts), RERUN_S)
        observed = {
            "status_after_kill": status_after_kill,
            "seconds_kill_to_status": world.seconds_to_leave(execution, killed_at),
            "worker_starts": world.worker_starts(execution),
            "kill_proof": kill_proof,
            "victim": victim.name,
        }
        return self.answered_held(world, held, observed=observed)

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        execution = evidence.get("execution")
        path = ev.status_path(evidence, execution)
        final = ev.final_status(evidence, execution)
        reran = ev.reached(evidence, RERUN_WAIT)
        facts: dict[str, Any] = {
            **ev.facts(evidence, "status_after_kill", "seconds_kill_to_status"),
            "status_after_restart": final,
            "status_path": path,
            **ev.facts(evidence, "worker_starts", "commits", "attempts", "sender", "kill_proof"),
        }
        if not facts["kill_proof"]:
            return undetermined(ev.unkilled(evidence), evidence)
        answer = f"{final}; {'re-run' if reran else 'not re-run'}"
        why = (
            f"execution {execution} went {' -> '.join(path)}; "
            f"{ev.tally(facts, 'commits', 'attempts', 'worker_starts')}, no other execution"
            if not reran
            else f"execution {execution} was re-run: {facts['attempts']} attempt(s), "
            f"{facts['worker_starts']} worker start(s), rows {len(ev.rows(evidence))}"
        ) + f"; the sender {facts['sender']}"
        return Answer(answer, why, facts, evidence)
