"""webhook_processor_kill: the webhook processor (``n8n webhook``) is SIGKILLed while a
synchronous webhook's sender waits for its answer (Webhook answered by its last node ->
Charge).

With a webhook processor, production webhooks go to ``n8n webhook``: it writes the execution
row, enqueues the job and holds the caller's connection until a worker finished it.
Strike: a worker runs the execution and the provider holds the committed charge's response;
the webhook processor is SIGKILLed; the sender's answer is awaited; the held response is
released; the webhook processor is restarted; the row is watched until it finishes, then the
stack a while longer for anything that runs the execution again.
Answer: what the sender saw, the row's final status, how often the charge ran, and whether
the worker still finished the execution (its "Worker finished execution N" log line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, register, undetermined, vocabulary
from harness.findings.window import Held
from harness.findings.world import WORKER_LINES, ProbeWorld

if TYPE_CHECKING:
    from harness.stack.stack import Stack

SENDER_S = 30.0  # the sender's connection ends with the process (Toxiproxy closes it)
SETTLE_S = 60.0  # after the release: the worker writes the row back
RERUN_S = 15.0  # after the restart: time for anything to run the execution again
SENDER_WAIT = "the sender's answer after the kill"
RERUN_WAIT = "anything to re-run the execution"
NO_WEBHOOK_PROCESSOR = (
    "the stack has no webhook processor (start it with StackConfig(webhook_processor=True), "
    "--n8n-webhook-processor; n8n-chaos findings does for this probe)"
)


@register("webhook_processor_kill")
class WebhookProcessorKill(ProbeBase):
    needs_webhook_processor = True
    question = (
        "The webhook processor (n8n webhook) is SIGKILLed while a synchronous webhook's "
        "sender waits and a worker runs its execution (the charge committed, its response "
        "held): what does the sender see, what status does the row end in, how often did the "
        "charge run, and does the worker still finish the execution?"
    )
    answers = vocabulary(
        "sender {sender}; row ends {status}; {ran}; worker {finished}",
        sender=ev.SENDER_WORDS,
        status=ev.STATUSES,
        ran=ev.CHARGE_RAN,
        finished=("finished it", "did not finish it"),
    )
    short = "webhook-kill"
    needles = ("Enqueued execution", "Received webhook", *WORKER_LINES, "crashed", "recover", "job")

    def run(self, stack: Stack) -> Answer:
        if stack.webhook is None:
            return undetermined(NO_WEBHOOK_PROCESSOR)
        return self.run_held(stack, self._strike)

    def _strike(self, world: ProbeWorld, held: Held) -> Answer:
        stack, execution = world.stack, held.execution_id
        victim = stack.webhook
        assert victim is not None
        _, kill_proof = world.kill(victim)
        # The sender's view while the worker still holds the execution (before the release).
        world.wait_for(SENDER_WAIT, held.sender.done, SENDER_S)
        sender_before_release = held.sender.done()
        held.release(world)
        world.restart(victim)
        world.wait_finished("the row to finish", execution, SETTLE_S)
        world.wait_for(RERUN_WAIT, lambda: world.reran(execution, world.commits), RERUN_S)
        observed = {
            "kill_proof": kill_proof,
            "victim": victim.name,
            "worker": world.stack.workers[held.worker].name,
            "sender_answered_before_release": sender_before_release,
            "worker_starts": world.worker_starts(execution),
            "worker_finishes": world.worker_finishes(execution),
        }
        return self.answered_held(world, held, observed=observed)

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        execution = evidence.get("execution")
        finishes = int(ev.observed(evidence).get("worker_finishes") or 0)
        facts: dict[str, Any] = {
            **ev.facts(
                evidence, "execution", "status_path", "commits", "attempts", "worker_starts"
            ),
            "worker_finishes": finishes,
            **ev.facts(evidence, "executions", "sender", "sender_error"),
            **ev.facts(evidence, "sender_answered_before_release"),
            "re_run_seen": ev.reached(evidence, RERUN_WAIT),
            **ev.facts(evidence, "kill_proof"),
        }
        if not facts["kill_proof"]:
            return undetermined(ev.unkilled(evidence), evidence)
        final = ev.final_status(evidence, execution)
        sender, ran = facts["sender"], ev.charge_ran(facts["commits"])
        finished = "finished it" if finishes else "did not finish it"
        answer = f"sender {sender}; row ends {final}; {ran}; worker {finished}"
        when = "before" if facts["sender_answered_before_release"] else "not before"
        why = (
            f"the sender {sender} ({when} the held charge was released"
            + (f": {facts['sender_error']}" if facts["sender_error"] else "")
            + f"); {ev.course(facts, 'commits', 'worker_starts', 'worker_finishes', 'executions')}"
        )
        return Answer(answer, why, facts, evidence)
