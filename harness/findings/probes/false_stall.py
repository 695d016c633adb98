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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, register, undetermined, vocabulary
from harness.findings.window import Held
from harness.findings.world import FINISHED, WORKER_LINES, ProbeWorld

if TYPE_CHECKING:
    from harness.stack.stack import Stack

STOP_CONFIRM_S = 2.0
STALL_S = 90.0  # lock (5 s) + two stall sweeps + main's recheck grace (up to 30 s on 2.41)
FINISH_S = 60.0  # the resumed worker finishes the execution
RERUN_S = 15.0
STALL_WAIT = "n8n to declare the stall"
RUNS = {1: "ran once", 2: "ran twice"}


@dataclass
class Stall:
    """What pausing the worker running a held execution past its Bull lock showed."""

    job_seen: bool  # its job was seen in Bull's active list before the pause
    pause_proof: str | None  # the kernel's word that the worker was stopped (state T)
    status: str | None  # the row's, once n8n declared the stall (or gave up waiting)
    bull_jobs: list[dict[str, Any]]  # at the stall
    seconds_paused: float
    sender: dict[str, Any]  # what the sender had seen at the stall


def stall(world: ProbeWorld, held: Held, finish_s: float) -> Stall:
    """Pause (SIGSTOP) the worker running the held execution until n8n declares the stall
    (the row leaves ``running`` or the job leaves Bull's ``active``: n8n's verdict, never a
    fixed time), let the held response go and resume (SIGCONT) the worker; then wait
    ``finish_s`` for it to finish the execution and for the sender's answer."""
    execution, worker = held.execution_id, world.stack.workers[held.worker]
    # The job carrying the execution, seen active before the pause: its leaving Bull's
    # active list is then n8n's stall verdict (a job n8n removes on failure is gone).
    job_seen = _job_active(world, execution)
    paused_at = world.timeline.record("SIGSTOP", process=worker.name, pid=worker.pid)
    worker.pause()
    try:
        stopped = world.wait_for(
            "the kernel to show the worker stopped",
            lambda: worker.process.pause_proof() is not None,
            STOP_CONFIRM_S,
        )
        pause_proof = worker.process.pause_proof() if stopped else None

        def stall_declared() -> bool:
            left_active = job_seen and not _job_active(world, execution)
            return world.status(execution) != "running" or left_active

        world.wait_for(STALL_WAIT, stall_declared, STALL_S)
        status, jobs = world.status(execution), world.bull_jobs()
        seconds_paused = round(world.timeline.now() - paused_at, 2)
        sender = dict(held.sender.result)
        held.release(world)
    finally:
        world.timeline.record("SIGCONT", process=worker.name)
        worker.resume()
    world.wait_for(
        "the resumed worker to finish the execution",
        lambda: finished(world, held),
        finish_s,
    )
    world.wait_for("the sender's answer", held.sender.done, finish_s)
    return Stall(job_seen, pause_proof, status, jobs, seconds_paused, sender)


def finished(world: ProbeWorld, held: Held) -> bool:
    """The worker that ran the held execution logged that it finished it."""
    line = f"Worker finished execution {held.execution_id}"
    return line in world.log_since(world.stack.workers[held.worker].name)


def _job_active(world: ProbeWorld, execution: str) -> bool:
    return any("active" in j.get("states", ()) for j in world.jobs_of(execution))


def not_stalled(evidence: dict[str, Any], paused: str, stayed: str = "") -> str | None:
    """Why the stall was not struck as meant: the ``paused`` worker not seen stopped, or n8n
    declared no stall (``stayed``: what it left as it was); or None."""
    if not ev.observed(evidence).get("pause_proof"):
        return f"{paused} was not seen stopped (state T)"
    if not ev.reached(evidence, STALL_WAIT):
        return f"n8n did not declare the stall within {STALL_S:.0f} s of the pause{stayed}"
    return None


@register("false_stall")
class FalseStall(ProbeBase):
    question = (
        "A worker is paused (SIGSTOP) longer than its Bull job lock, then resumed: does the "
        "job run twice, does the execution row flip between states, what does the sender see?"
    )
    answers = vocabulary(
        "{runs}; row ends {status}, {flip}; sender {sender}",
        runs=("ran once", "ran twice", "ran three times or more"),
        status=ev.STATUSES,
        flip=("flipped", "no flip"),
        sender=ev.SENDER_WORDS,
    )
    short = "stall"
    needles = ("stalled", "Missing lock", "crashed", *WORKER_LINES)

    def run(self, stack: Stack) -> Answer:
        return self.run_held(stack, self._strike)

    def _strike(self, world: ProbeWorld, held: Held) -> Answer:
        execution, worker = held.execution_id, world.stack.workers[held.worker]
        stalled = stall(world, held, FINISH_S)
        world.wait_for(
            "a second run (a commit or a worker start)",
            lambda: len(world.commits()) > 1 or world.worker_starts(execution) > 1,
            RERUN_S,
        )
        observed = {
            "status_at_stall": stalled.status,
            "seconds_paused": stalled.seconds_paused,
            "worker_starts": world.worker_starts(execution),
            "resumed_worker_finished": finished(world, held),
            "pause_proof": stalled.pause_proof,
            "paused_worker": worker.name,
            "bull_job_seen_active_before_pause": stalled.job_seen,
        }
        at_stall = {
            "status": stalled.status,
            "bull_jobs": stalled.bull_jobs,
            "seconds_paused": stalled.seconds_paused,
            "sender": stalled.sender,
        }
        return self.answered_held(world, held, at_stall=at_stall, observed=observed)

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        execution = evidence.get("execution")
        path = ev.status_path(evidence, execution)
        commits = ev.commit_count(evidence)
        final = ev.final_status(evidence, execution)
        facts = {
            "status_path": path,
            **ev.facts(evidence, "status_at_stall", "seconds_paused", "commits", "attempts"),
            **ev.facts(evidence, "worker_starts", "resumed_worker_finished", "sender"),
            "sender_status": (evidence.get("sender") or {}).get("status"),
            **ev.facts(evidence, "pause_proof", "bull_job_seen_active_before_pause"),
        }
        paused = str(ev.observed(evidence).get("paused_worker"))
        void = not_stalled(evidence, paused, " (the row stayed running and the job active)")
        if void is not None:
            return undetermined(void, evidence)
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
