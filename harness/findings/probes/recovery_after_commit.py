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
from harness.findings.base import Answer, ProbeBase, checked, register, undetermined, vocabulary
from harness.findings.window import Held, hold_after_commit
from harness.findings.workflows import charge_workflow
from harness.findings.world import ProbeWorld

if TYPE_CHECKING:
    from harness.stack.stack import Stack

STATUSES = ("crashed", "error", "success", "running", "new", "waiting", "canceled", "unknown")
SENDER_S = 30.0
RERUN_S = 20.0  # after the killed worker is back: time for any recovery to re-run it
RERUN_WAIT = "anything to re-run the execution"
NEEDLES = (
    "stalled",
    "crashed",
    "recover",
    "Missing lock",
    "Worker started execution",
    "Worker finished execution",
)


@register("recovery_after_commit")
class RecoveryAfterCommit(ProbeBase):
    question = (
        "An execution's charge committed at the provider and its worker was SIGKILLed "
        "before writing back: what status does n8n leave it in, and does anything re-run it?"
    )
    answers = vocabulary("{status}; {rerun}", status=STATUSES, rerun=("re-run", "not re-run"))

    def workflow(self) -> dict[str, Any]:
        return charge_workflow("recovery_after_commit", "probe-recovery-KEY")

    def run(self, stack: Stack) -> Answer:
        with ProbeWorld(stack, "recovery") as world:
            world.deploy(charge_workflow("recovery_after_commit", f"probe-{world.key}"))
            held = hold_after_commit(world)
            if isinstance(held, str):
                return undetermined(held, world.evidence(NEEDLES))
            return checked(self, self._strike(world, held))

    def _strike(self, world: ProbeWorld, held: Held) -> Answer:
        execution, victim = held.execution_id, world.stack.workers[held.worker]
        killed_at, kill_proof, status_after_kill = held.kill_worker(world)
        world.wait_for("the sender's answer", held.sender.done, SENDER_S)
        world.restart(victim)

        def rerun() -> bool:
            others = [r for r in world.rows() if r["id"] != execution]
            return bool(others) or world.worker_starts(execution) > 1 or len(world.attempts()) > 1

        world.wait_for(RERUN_WAIT, rerun, RERUN_S)
        observed = {
            "status_after_kill": status_after_kill,
            "seconds_kill_to_status": world.seconds_to_leave(execution, killed_at),
            "worker_starts": world.worker_starts(execution),
            "kill_proof": kill_proof,
            "victim": victim.name,
        }
        return self.judge(
            world.evidence(
                NEEDLES, execution=execution, sender=held.sender.result, observed=observed
            )
        )

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        seen = ev.observed(evidence)
        execution = evidence.get("execution")
        path = ev.status_path(evidence, execution)
        final = ev.final_status(evidence, execution)
        reran = ev.reached(evidence, RERUN_WAIT)
        facts: dict[str, Any] = {
            "status_after_kill": seen.get("status_after_kill"),
            "seconds_kill_to_status": seen.get("seconds_kill_to_status"),
            "status_after_restart": final,
            "status_path": path,
            "worker_starts": seen.get("worker_starts"),
            "commits": ev.commit_count(evidence),
            "attempts": ev.attempt_count(evidence),
            "sender": ev.sender_seen(evidence.get("sender")),
            "kill_proof": seen.get("kill_proof"),
        }
        if not facts["kill_proof"]:
            return undetermined(f"{seen.get('victim')} did not end by SIGKILL", evidence)
        answer = f"{final}; {'re-run' if reran else 'not re-run'}"
        why = (
            f"execution {execution} went {' -> '.join(path)}; "
            f"{facts['commits']} commit(s), {facts['attempts']} attempt(s), "
            f"{facts['worker_starts']} worker start(s), no other execution"
            if not reran
            else f"execution {execution} was re-run: {facts['attempts']} attempt(s), "
            f"{facts['worker_starts']} worker start(s), rows {len(ev.rows(evidence))}"
        ) + f"; the sender {facts['sender']}"
        return Answer(answer, why, facts, evidence)
