"""An incident asked of n8n itself, in a few lines, with the findings machinery.

What happened in production: a worker died right after Stripe charged a card; n8n failed the
execution; the on-call engineer pressed "Retry" on it. Was the customer charged twice?

Run it (a real n8n in queue mode comes up for the session, then goes away):

    pytest examples/incident -s

The probe below deploys a minimal Webhook -> Charge workflow, holds the provider's answer
after the commit (the window), SIGKILLs the worker running the execution, lets n8n fail it,
retries it through the public API as the operator did, and answers from what the provider and
n8n's rows recorded. ``judge`` is a pure function of that evidence, so the answer can be
checked again from the saved findings.json; the answer comes from a closed list or is
UNDETERMINED with why (never a guess).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, undetermined
from harness.findings.report import Findings, VersionRun, write
from harness.findings.session import run_probe
from harness.findings.window import hold_after_commit
from harness.findings.workflows import charge_workflow
from harness.findings.world import ProbeWorld
from harness.stack.stack import Stack

SETTLE_S = 90.0  # n8n's stall sweep fails an execution whose worker died within this


class RetryAfterCrash(ProbeBase):
    name = "incident_retry_after_crash"
    question = (
        "A worker died after the charge committed and n8n failed the execution; the operator "
        "retried it once: how many charges?"
    )
    answers: ClassVar[tuple[str, ...]] = ("one charge", "two charges", "more than two charges")

    def workflow(self) -> dict[str, Any]:
        return charge_workflow(self.name, "incident-KEY")

    def run(self, stack: Stack) -> Answer:
        with ProbeWorld(stack, "incident") as world:
            world.deploy(charge_workflow(self.name, f"incident-{world.key}"))
            held = hold_after_commit(world)  # the provider committed and holds its answer
            if isinstance(held, str):
                return undetermined(held, world.evidence(()))
            victim = stack.workers[held.worker]
            victim.kill()
            held.release(world)
            ended = lambda: world.status(held.execution_id) not in ("new", "running")  # noqa: E731
            if not world.wait_for("n8n to fail the execution", ended, SETTLE_S):
                return undetermined("the execution never ended", world.evidence(()))
            assert stack.api is not None
            stack.api.retry_execution(held.execution_id)  # the operator's "Retry"
            world.wait_for("the retry to charge", lambda: len(world.attempts()) > 1, 60.0)
            victim.restart(stack.config.ready_timeout_s)
            return self.judge(world.evidence((), execution=held.execution_id))

    def judge(self, evidence: dict[str, Any]) -> Answer:
        commits = ev.commit_count(evidence)
        if commits == 0:
            return undetermined("the provider recorded no charge", evidence)
        answer = {1: "one charge", 2: "two charges"}.get(commits, "more than two charges")
        path = " -> ".join(ev.status_path(evidence, evidence.get("execution")))
        why = f"execution {evidence.get('execution')} went {path}; {commits} charge(s)"
        return Answer(answer, why, {"commits": commits}, evidence)


def test_retry_after_crash(n8n_stack: Stack, tmp_path: Path) -> None:
    probe = RetryAfterCrash()
    answer = run_probe(probe, n8n_stack)
    findings, version = Findings(), n8n_stack.config.n8n_version
    findings.versions[version] = VersionRun(True, None, str(n8n_stack.run.run_dir))
    findings.add(probe, version, answer)
    report, _ = write(findings, tmp_path)  # findings.json + findings.md, as `n8n-chaos findings`
    print(f"{probe.question}\n  {answer.answer}: {answer.why}\n  report: {report}")
    assert answer.determined, answer.why
    assert answer.answer in probe.answers
