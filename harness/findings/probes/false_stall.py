"""false_stall: the worker running an execution is paused (SIGSTOP) longer than its Bull
job lock, while the provider holds the committed charge's response; then the response is
released and the worker resumed.

n8n's stack runs with QUEUE_WORKER_LOCK_DURATION=5000, QUEUE_WORKER_LOCK_RENEW_TIME=2000 and
QUEUE_WORKER_STALLED_INTERVAL=5000 (``harness.stack.n8n.FAST_CRASH_SETTINGS``; n8n's
defaults are 60000/10000/30000, the same code path, slower): the paused worker cannot renew
its lock, so the other worker's stall sweep finds the job unlocked. The pause lasts until
n8n shows it declared the stall (the row leaves ``running`` or the job leaves Bull's
``active``), never a fixed time.

Answer: how often the charge ran (provider commits), the row's final status and whether it
flipped from one finished status to another, and what the sender got.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, checked, register, undetermined, vocabulary
from harness.findings.probes.recovery_after_commit import STATUSES
from harness.findings.window import Held, hold_after_commit
from harness.findings.workflows import charge_workflow
from harness.findings.world import ProbeWorld

if TYPE_CHECKING:
    from harness.stack.stack import Stack

STOP_CONFIRM_S = 2.0
STALL_S = 90.0  # lock (5 s) + two stall sweeps + main's recheck grace (up to 30 s on 2.41)
FINISH_S = 60.0  # the resumed worker finishes the execution
RERUN_S = 15.0
STALL_WAIT = "n8n to declare the stall"
FINISHED = ("success", "error", "crashed", "canceled")
RUNS = {1: "ran once", 2: "ran twice"}
NEEDLES = (
    "stalled",
    "Missing lock",
    "crashed",
    "Worker started execution",
    "Worker finished execution",
)


@register("false_stall")
class FalseStall(ProbeBase):
    question = (
        "A worker is paused (SIGSTOP) longer than its Bull job lock, then resumed: does the "
        "job run twice, does the execution row flip between states, what does the sender see?"
    )
    answers = vocabulary(
        "{runs}; row ends {status}, {flip}; sender {sender}",
        runs=("ran once", "ran twice", "ran three times or more"),
        status=STATUSES,
        flip=("flipped", "no flip"),
        sender=("got 200", "got 500", "got another status", "got no answer"),
    )

    def workflow(self) -> dict[str, Any]:
        return charge_workflow("false_stall", "probe-stall-KEY")

    def run(self, stack: Stack) -> Answer:
        with ProbeWorld(stack, "stall") as world:
            world.deploy(charge_workflow("false_stall", f"probe-{world.key}"))
            held = hold_after_commit(world)
            if isinstance(held, str):
                return undetermined(held, world.evidence(NEEDLES))
            try:
                return checked(self, self._strike(world, held))
            finally:
                stack.workers[held.worker].resume()

    @staticmethod
    def _job_active(world: ProbeWorld, execution: str) -> bool:
        jobs = [j for j in world.bull_jobs() if j.get("execution") == execution]
        return any("active" in j.get("states", ()) for j in jobs)

    def _strike(self, world: ProbeWorld, held: Held) -> Answer:
        execution, worker = held.execution_id, world.stack.workers[held.worker]
        # The job carrying the execution, seen active before the pause: its leaving Bull's
        # active list is then n8n's stall verdict (a job n8n removes on failure is gone).
        job_seen = self._job_active(world, execution)
        paused_at = world.timeline.record("SIGSTOP", process=worker.name, pid=worker.pid)
        worker.pause()
        pause_proof = None
        if world.wait_for(
            "the kernel to show the worker stopped",
            lambda: worker.process.pause_proof() is not None,
            STOP_CONFIRM_S,
        ):
            pause_proof = worker.process.pause_proof()

        def stall_declared() -> bool:
            left_active = job_seen and not self._job_active(world, execution)
            return world.status(execution) != "running" or left_active

        world.wait_for(STALL_WAIT, stall_declared, STALL_S)
        at_stall = {
            "status": world.status(execution),
            "bull_jobs": world.bull_jobs(),
            "seconds_paused": round(world.timeline.now() - paused_at, 2),
            "sender": dict(held.sender.result),
        }
        held.release(world)
        world.timeline.record("SIGCONT", process=worker.name)
        worker.resume()
        finished_needle = f"Worker finished execution {execution}"
        world.wait_for(
            "the resumed worker to finish the execution",
            lambda: finished_needle in world.log_since(worker.name),
            FINISH_S,
        )
        world.wait_for("the sender's answer", held.sender.done, FINISH_S)
        world.wait_for(
            "a second run (a commit or a worker start)",
            lambda: len(world.commits()) > 1 or world.worker_starts(execution) > 1,
            RERUN_S,
        )
        observed = {
            "status_at_stall": at_stall["status"],
            "seconds_paused": at_stall["seconds_paused"],
            "worker_starts": world.worker_starts(execution),
            "resumed_worker_finished": finished_needle in world.log_since(worker.name),
            "pause_proof": pause_proof,
            "paused_worker": worker.name,
            "bull_job_seen_active_before_pause": job_seen,
        }
        return self.judge(
            world.evidence(
                NEEDLES,
                execution=execution,
                sender=held.sender.result,
                at_stall=at_stall,
                observed=observed,
            )
        )

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        seen = ev.observed(evidence)
        execution = evidence.get("execution")
        path = ev.status_path(evidence, execution)
        commits = ev.commit_count(evidence)
        final = ev.final_status(evidence, execution)
        sender = evidence.get("sender") or {}
        facts = {
            "status_path": path,
            "status_at_stall": seen.get("status_at_stall"),
            "seconds_paused": seen.get("seconds_paused"),
            "commits": commits,
            "attempts": ev.attempt_count(evidence),
            "worker_starts": seen.get("worker_starts"),
            "resumed_worker_finished": seen.get("resumed_worker_finished"),
            "sender": ev.sender_seen(sender),
            "sender_status": sender.get("status"),
            "pause_proof": seen.get("pause_proof"),
            "bull_job_seen_active_before_pause": seen.get("bull_job_seen_active_before_pause"),
        }
        if not facts["pause_proof"]:
            return undetermined(
                f"{seen.get('paused_worker')} was not seen stopped (state T)", evidence
            )
        if not ev.reached(evidence, STALL_WAIT):
            return undetermined(
                f"n8n did not declare the stall within {STALL_S:.0f} s of the pause "
                "(the row stayed running and the job active)",
                evidence,
            )
        if commits < 1:
            return undetermined("the provider shows no commit for the probe's key", evidence)
        runs = RUNS.get(commits, "ran three times or more")
        flipped = [s for s in path if s in FINISHED]
        flip = "flipped" if len(set(flipped)) > 1 else "no flip"
        answer = f"{runs}; row ends {final}, {flip}; sender {facts['sender']}"
        why = (
            f"after {facts['seconds_paused']} s paused the row was {facts['status_at_stall']}; "
            f"execution {execution} went {' -> '.join(path)}; {commits} commit(s); "
            f"sender HTTP {facts['sender_status']}"
        )
        return Answer(answer, why, facts, evidence)
