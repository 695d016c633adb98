"""webhook_redis_cut: the webhook processor's link to Redis (Toxiproxy ``webhook_redis``) is
cut while a synchronous webhook's delivery is in it, after its execution row was written and
before its job reached Redis; the cut is held, then the link restored.

Strike (as ``main_kill_before_enqueue``, with a cut instead of a kill): every command the
webhook processor sends to Redis arrives LATENCY_MS late (a latency toxic upstream); the
delivery is sent; once its row exists and Redis holds no job for it, the link is disabled
(open connections closed, new ones refused: what Toxiproxy still delayed is dropped) and
held down CUT_S, longer than n8n's Redis reconnect threshold (10 s by default); then it is
restored (a webhook processor that exited meanwhile is restarted) and the row is watched
until it finishes.
A job Redis held at the moment of the cut voids the strike. The job's own timestamp cannot
date its arrival (Bull stamps a job when the client creates it, and a client resends what
a dropped connection left unanswered), so the harness's own look into Redis at the cut and
at the cut's end dates it.
Answer: whether the job was enqueued during the cut, after the restore or never, the row's
final status, how often the charge ran, what the sender saw, and whether the webhook
processor stayed up.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, register, undetermined, vocabulary
from harness.findings.probes.main_kill_enqueue import Struck
from harness.findings.probes.webhook_processor_kill import NO_WEBHOOK_PROCESSOR
from harness.findings.world import WORKER_LINES, ProbeWorld

if TYPE_CHECKING:
    from harness.stack.stack import Stack

LINK = "webhook_redis"
LATENCY_MS = 3_000  # webhook processor -> Redis, while the row is awaited
TOXIC = "probe_webhook_enqueue_latency"
ROW_S = 45.0  # the row shows (a few slowed Redis round trips come first)
CUT_S = 15.0  # the link is down this long: past n8n's 10 s Redis reconnect threshold
SETTLE_S = 60.0  # after the restore: the row finishes, or anything runs it
SENDER_S = 30.0
EXIT_WAIT = "the webhook processor to exit during the cut"
SETTLE_WAIT = "the row to finish after the restore"
JOB_WAIT = "the job to reach Redis during the cut"
JOBS = ("job enqueued during the cut", "job enqueued after the restore", "job never enqueued")


@register("webhook_redis_cut")
class WebhookRedisCut(ProbeBase):
    needs_webhook_processor = True
    question = (
        "The webhook processor's link to Redis is cut after it wrote a synchronous webhook's "
        "execution row and before the job reached Redis, then restored after 15 s: is the job "
        "enqueued or lost, what status does the row end in, how often does the charge run, "
        "what does the sender see, and does the webhook processor stay up?"
    )
    answers = vocabulary(
        "{job}; row ends {status}; {ran}; sender {sender}; webhook processor {process}",
        job=JOBS,
        **ev.RUN_WORDS,
        process=("stayed up", "exited"),
    )
    short = "webhook-redis"
    needles = (
        "Redis",
        "ECONNREFUSED",
        "enqueue",
        "Enqueued execution",
        "Received webhook",
        *WORKER_LINES,
        "crashed",
        "error",
    )

    def run(self, stack: Stack) -> Answer:
        if stack.webhook is None:
            return undetermined(NO_WEBHOOK_PROCESSOR)
        with self.world(stack) as world:
            struck = self._strike(world)
            if isinstance(struck, str):
                return self.missed(world, struck)
            execution, sender, observed = struck
            world.wait_finished(SETTLE_WAIT, execution, SETTLE_S)
            world.wait_for("the sender's answer", sender.done, SENDER_S)
            observed |= {
                "worker_starts": world.worker_starts(execution),
                "worker_finishes": world.worker_finishes(execution),
            }
            return self.answered(
                world, execution=execution, sender=sender.result, observed=observed
            )

    def _strike(self, world: ProbeWorld) -> Struck:
        """(the execution, its sender, what only the run saw) with the link cut and restored;
        or why the window was not reached (the link is restored either way)."""
        stack, webhook = world.stack, world.stack.webhook
        assert webhook is not None
        link = stack.proxies[LINK]
        observed: dict[str, Any] = {}
        with world.slowed(link, TOXIC, LATENCY_MS, "restored"):
            sender = world.send()
            execution = world.row_without_job(ROW_S)
            if execution is None:
                return f"no execution row without a Bull job within {ROW_S:.0f} s"
            # Disabling closes the link: what the toxic still delayed never reaches Redis.
            link.disable()
            world.timeline.record(f"{LINK} cut", execution=execution)
            observed["jobs_at_cut"] = world.jobs_of(execution)
            with contextlib.suppress(HarnessError):
                link.remove_toxic(TOXIC)
            # The cut's length is the fault; meanwhile watch for the process ending.
            world.wait_for(EXIT_WAIT, lambda: not webhook.process.running, CUT_S)
            observed |= {
                "jobs_at_cut_end": world.jobs_of(execution),
                "status_at_cut_end": world.status(execution),
                "sender_at_cut_end": dict(sender.result) if sender.done() else None,
                "webhook_exit_code": webhook.process.returncode,
            }
            if observed["jobs_at_cut_end"]:
                world.timeline.record("reached", what=JOB_WAIT)
        if not webhook.process.running:
            world.restart(webhook)
        return execution, sender, observed

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        seen = ev.observed(evidence)
        execution = evidence.get("execution")
        jobs_after = [j for j in evidence.get("bull_jobs") or [] if j.get("execution") == execution]
        exited = ev.reached(evidence, EXIT_WAIT)
        facts: dict[str, Any] = {
            **ev.facts(evidence, "execution", "status_path", "status_at_cut_end", "jobs_at_cut"),
            **ev.facts(evidence, "jobs_at_cut_end"),
            "jobs_after_restore": jobs_after,
            **ev.facts(evidence, "commits", "attempts", "worker_starts", "worker_finishes"),
            **ev.facts(evidence, "executions", "sender", "sender_error"),
            "sender_answered_during_cut": seen.get("sender_at_cut_end") is not None,
            "webhook_processor_exited": exited,
            **ev.facts(evidence, "webhook_exit_code"),
        }
        commits, sender = facts["commits"], facts["sender"]
        if "jobs_at_cut" not in seen:
            return undetermined("the link was not cut (no look into Redis at the cut)", evidence)
        if seen.get("jobs_at_cut"):
            return undetermined("the job was in Redis when the link was cut", evidence)
        if seen.get("jobs_at_cut_end"):
            job = JOBS[0]
        elif jobs_after or int(seen.get("worker_starts") or 0) > 0:
            job = JOBS[1]
        else:
            job = JOBS[2]
        final = ev.final_status(evidence, execution)
        ran = ev.charge_ran(commits)
        process = "exited" if exited else "stayed up"
        answer = f"{job}; row ends {final}; {ran}; sender {sender}; webhook processor {process}"
        recovered = final == "success" and commits == 1
        settled = ev.reached(evidence, SETTLE_WAIT)
        unfinished = "" if settled else f", still {final} {SETTLE_S:.0f} s after the restore"
        why = (
            f"{ev.course(facts)} "
            f"({facts['status_at_cut_end']} at the cut's end{unfinished}); "
            f"{len(jobs_after)} job(s) for it in Redis after the restore, "
            f"{ev.tally(facts, 'commits', 'worker_starts')}: "
            f"{'recovered' if recovered else 'not recovered'}; the sender {sender}"
            + (f" ({facts['sender_error']})" if facts["sender_error"] else "")
            + (" during the cut" if facts["sender_answered_during_cut"] else "")
            + f"; the webhook processor {process}"
            + (f" (code {facts['webhook_exit_code']})" if exited else "")
        )
        return Answer(answer, why, facts, evidence)
