"""wait_parked_across_kill: an execution parked in the database by a Wait node (a time
interval over n8n's in-process threshold) outlives a SIGKILL of the worker that ran its
first part and of main.

What n8n 2.40.7's code says: the Wait node (``nodes/Wait/Wait.node.ts``) keeps a wait under
65 s in process (a timer in the running execution); a longer one is put to wait: the row
becomes ``waiting`` with ``waitTill``. Main's wait tracker (``wait-tracker.ts``, on the
leader) queries every 60 s for waiting rows due within 70 s and sets a timer for each, whose
start runs the rest (``WorkflowRunner.run``, expected status ``waiting``, a job for a worker).

The workflow (``wait_interval_workflow``): Webhook (answered on receipt) -> Wait
(``WAIT_S`` seconds, just over the threshold) -> Charge (one provider commit per resumed run).
Strike: once the row is ``waiting``, the worker that ran the first part is SIGKILLed and
stays down; main is SIGKILLed and restarted (its tracker's timers were in memory). After
``waitTill`` the row is watched until it finishes, then for a second charge; the worker is
started again at the end. The answer: the row's final status and how often the Charge ran.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, register, undetermined, vocabulary
from harness.findings.workflows import wait_interval_workflow
from harness.findings.world import FINISHED, WORKER_LINES
from harness.stack import n8n_db

if TYPE_CHECKING:
    from harness.stack.stack import Stack

WAIT_S = 70  # over the Wait node's 65 s in-process threshold, by as little as is safe
SEND_S = 30.0  # the delivery is answered (on receipt)
PARK_S = 30.0  # the row is seen waiting
RESUME_S = 45.0  # after waitTill: the resumed run finishes (the tracker may be late)
AFTER_S = 10.0  # after it finished: time for a second run to charge again
PARK_WAIT = "the execution to park as waiting"


@register("wait_parked_across_kill")
class WaitParkedAcrossKill(ProbeBase):
    question = (
        f"An execution parked in the database by a Wait node ({WAIT_S} s, over n8n's 65 s "
        "in-process threshold) outlives a SIGKILL of the worker that ran its first part and "
        "a SIGKILL and restart of main: after waitTill, does it resume and charge once, never "
        "or twice?"
    )
    answers = vocabulary(
        "row ends {status}; charge ran {ran}",
        status=ev.STATUSES,
        ran=ev.TIMES,
    )
    short = "parked"
    needles = ("waiting", "resum", "recover", "crashed", *WORKER_LINES)

    def build(self, path: str) -> dict[str, Any]:
        return wait_interval_workflow(self.name, path, WAIT_S)

    def workflow(self) -> dict[str, Any]:
        return self.build("probe-KEY")

    def run(self, stack: Stack) -> Answer:
        with self.world(stack) as world:
            sender = world.send(timeout_s=SEND_S)

            def parked() -> str | None:
                return next((r["id"] for r in world.rows() if r["status"] == "waiting"), None)

            execution = world.wait_found(PARK_WAIT, parked, PARK_S)
            if execution is None:
                return self.missed(world, f"no row was seen waiting within {PARK_S:.0f} s")
            due = n8n_db.wait_till(stack.postgres_dsn, execution)
            index = stack.worker_running(execution)
            if due is None or index is None:
                why = f"execution {execution}: no waitTill ({due}) or no worker ran it ({index})"
                return self.missed(world, why, execution=execution)
            world.timeline.record("parked", execution=execution, wait_till=due)
            worker = stack.workers[index]
            worker_killed_at, worker_proof = world.kill(worker)
            main_killed_at, main_proof = world.kill(stack.main)
            world.restart(stack.main)
            world.wait_for(
                "the resumed run to finish",
                lambda: world.status(execution) in FINISHED and len(world.commits()) > 0,
                max(0.0, due - time.time()) + RESUME_S,
            )
            world.wait_for("a second charge", lambda: len(world.commits()) > 1, AFTER_S)
            world.restart(worker)
            observed = {
                "wait_till": due,
                "worker_kill_proof": worker_proof,
                "main_kill_proof": main_proof,
                "killed_at": max(worker_killed_at, main_killed_at),
                "worker_starts": world.worker_starts(execution),
                "victim": worker.name,
            }
            return self.answered(
                world, execution=execution, sender=sender.result, observed=observed
            )

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        seen = ev.observed(evidence)
        execution = evidence.get("execution")
        steps = (evidence.get("status_paths") or {}).get(str(execution), [])
        commits = ev.commit_count(evidence)
        due_t = (
            round(float(seen["wait_till"]) - float(evidence["started_at"]), 2)
            if seen.get("wait_till") is not None and evidence.get("started_at") is not None
            else None
        )
        parked_t = next((float(s["t"]) for s in steps if s["status"] == "waiting"), None)
        resumed_t = next(
            (float(s["t"]) for s in steps if parked_t is not None and s["t"] > parked_t), None
        )
        facts: dict[str, Any] = {
            **ev.facts(evidence, *ev.RUN_FACTS),
            "seconds_parked_to_wait_till": (
                round(due_t - parked_t, 2) if due_t is not None and parked_t is not None else None
            ),
            "seconds_wait_till_to_resume": (
                round(resumed_t - due_t, 2) if due_t is not None and resumed_t is not None else None
            ),
            "worker_kill_proof": seen.get("worker_kill_proof"),
            "main_kill_proof": seen.get("main_kill_proof"),
        }
        if parked_t is None or due_t is None:
            return undetermined(f"execution {execution} was never seen parked", evidence)
        if not (facts["worker_kill_proof"] and facts["main_kill_proof"]):
            return undetermined(f"{seen.get('victim')} or main did not end by SIGKILL", evidence)
        if float(seen.get("killed_at") or due_t) >= due_t:
            return undetermined("the kills came after waitTill: not while parked", evidence)
        answer = f"row ends {facts['final_status']}; charge ran {ev.times(commits)}"
        late = facts["seconds_wait_till_to_resume"]
        why = (
            f"{ev.course(facts)}; parked "
            f"{facts['seconds_parked_to_wait_till']} s before waitTill, "
            + (f"left waiting {late} s after it" if late is not None else "never left waiting")
            + f"; {ev.tally(facts, 'commits', 'worker_starts', 'executions')}"
        )
        return Answer(answer, why, facts, evidence)
