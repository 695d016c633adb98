"""error_workflow_after_stall / _after_recovery / _after_postgres_cut: how many times n8n
runs a workflow's Error Workflow when the execution's worker stalls, dies with main, or
loses Postgres (the family of ``error_workflow_runs``: the same charge workflow naming the
same recording Error Workflow, its runs counted by rows and by provider records).

Each case holds the committed charge's response at the provider (the execution running on
a known worker), strikes, releases the response, and waits for the row to finish:
- ``error_workflow_after_stall``: the worker is paused (SIGSTOP) until n8n declares the
  stall (its Bull lock, 5 s in the stack's fast-crash settings, not renewed; the row leaves
  ``running`` or the job leaves Bull's ``active``), then the response released and the
  worker resumed: it finishes the execution it was running;
- ``error_workflow_after_recovery``: the worker is SIGKILLed, then main is SIGKILLed
  before anything finished the row; the response is released into the dead socket; main is
  restarted (its startup recovery looks at unfinished executions), then the worker;
- ``error_workflow_after_postgres_cut``: the worker's link to Postgres (Toxiproxy
  ``worker{i}_postgres``) is disabled and the response released, so the worker ends the
  execution with no database; the link stays down until the worker's connection monitor
  gives the link up (3 failed pings, 2 s apart: it logs "Triggering database connection
  recovery", then destroys and re-creates its pool with backoff), then it is restored and
  the worker is watched until it says the connection recovered. A row the worker could not
  finish stays unfinished: that is the answer, not a missed window.
"""

from __future__ import annotations

from typing import Any

from harness.findings import evidence as ev
from harness.findings.base import register
from harness.findings.probes.error_workflow_runs import FINISH_S, ErrorWorkflowRuns, Failed
from harness.findings.probes.false_stall import not_stalled, stall
from harness.findings.window import hold_after_commit
from harness.findings.world import FINISHED, ProbeWorld

GIVE_UP_S = 30.0  # the worker's monitor gives the link up (3 pings 2 s apart, plus slack)
RECOVERED_S = 60.0  # the restored link: the worker's monitor says it is back
UNFINISHED_S = 30.0  # after the restore: the row finishes, or it is left as it is
GIVE_UP_LINE = "Triggering database connection recovery"
RECOVERED_LINE = "Database connection recovered"
GIVE_UP_WAIT = "the worker to give its Postgres link up"


@register("error_workflow_after_stall")
class ErrorWorkflowAfterStall(ErrorWorkflowRuns):
    case = "stall"
    question = (
        "The worker running an execution is paused (SIGSTOP) longer than its Bull job lock, "
        "then resumed: how many times does the workflow's Error Workflow run?"
    )
    extra_facts = ("pause_proof", "status_at_stall", "seconds_paused")

    def _fail(self, world: ProbeWorld) -> Failed:
        held = hold_after_commit(world)
        if isinstance(held, str):
            return held
        stalled = stall(world, held, FINISH_S)
        return self._finished(
            world,
            held,
            "the execution to finish",
            "of the resume",
            pause_proof=stalled.pause_proof,
            status_at_stall=stalled.status,
            seconds_paused=stalled.seconds_paused,
        )

    def _void(self, evidence: dict[str, Any], facts: dict[str, Any]) -> str | None:
        del facts
        return not_stalled(evidence, "the worker running it")


@register("error_workflow_after_recovery")
class ErrorWorkflowAfterRecovery(ErrorWorkflowRuns):
    case = "recovery"
    question = (
        "The worker running an execution is SIGKILLed, then main is SIGKILLed and restarted "
        "(its startup recovery), then the worker: how many times does the workflow's Error "
        "Workflow run, across the kill and the restarts?"
    )
    extra_facts = ("main_kill_proof", "status_before_restart")

    def _fail(self, world: ProbeWorld) -> Failed:
        held = hold_after_commit(world)
        if isinstance(held, str):
            return held
        execution, worker = held.execution_id, world.stack.workers[held.worker]
        _, kill_proof = world.kill(worker)
        _, main_kill_proof = world.kill(world.stack.main)
        held.release(world)
        status_before_restart = world.status(execution)
        world.restart(world.stack.main)
        world.restart(worker)
        world.wait_for("the sender's answer", held.sender.done, FINISH_S)
        return self._finished(
            world,
            held,
            "the execution to finish (after the restarts)",
            "of a restart",
            kill_proof=kill_proof,
            main_kill_proof=main_kill_proof,
            status_before_restart=status_before_restart,
        )

    def _void(self, evidence: dict[str, Any], facts: dict[str, Any]) -> str | None:
        del evidence
        if not facts["kill_proof"]:
            return "the worker running it did not end by SIGKILL"
        if not facts["main_kill_proof"]:
            return "main did not end by SIGKILL"
        if facts["status_before_restart"] in FINISHED:
            return (
                f"the row was already {facts['status_before_restart']} before main's restart: "
                "its recovery had nothing to recover"
            )
        return None


@register("error_workflow_after_postgres_cut")
class ErrorWorkflowAfterPostgresCut(ErrorWorkflowRuns):
    case = "postgres_cut"
    question = (
        "The worker running an execution loses its Postgres link until its connection "
        "monitor gives the link up, then the link is restored: how many times does the "
        "workflow's Error Workflow run, and what does the execution end as?"
    )
    extra_facts = ("link", "link_disabled", "seconds_cut", "worker_recovered_link")
    needles = (*ErrorWorkflowRuns.needles, "Database", "ECONNREFUSED", "Connection terminated")
    unfinished_is_an_answer = True

    def _fail(self, world: ProbeWorld) -> Failed:
        held = hold_after_commit(world)
        if isinstance(held, str):
            return held
        execution, worker = held.execution_id, world.stack.workers[held.worker]
        link = world.stack.worker_upstream_proxy(held.worker, "postgres")
        mark = len(world.log_since(worker.name))

        def logged(line: str) -> bool:
            return line in world.log_since(worker.name)[mark:]

        cut_at = world.timeline.record("link cut", link=link.name)
        link.disable()
        try:
            # Toxiproxy's own word that the link is down, read back from its API.
            disabled = not world.stack.toxiproxy.proxy(link.name).enabled
            held.release(world)
            world.wait_for(GIVE_UP_WAIT, lambda: logged(GIVE_UP_LINE), GIVE_UP_S)
        finally:
            link.enable()
            seconds_cut = round(world.timeline.now() - cut_at, 2)
            world.timeline.record("link restored", link=link.name)
        recovered = world.wait_for(
            "the worker to say its Postgres link recovered",
            lambda: logged(RECOVERED_LINE),
            RECOVERED_S,
        )
        world.wait_for("the sender's answer", held.sender.done, FINISH_S)
        world.wait_finished("the execution to finish", execution, UNFINISHED_S)
        return execution, {
            "link": link.name,
            "link_disabled": disabled,
            "seconds_cut": seconds_cut,
            "worker_recovered_link": recovered,
            "sender": held.sender.seen(),
        }

    def _void(self, evidence: dict[str, Any], facts: dict[str, Any]) -> str | None:
        if not facts["link_disabled"]:
            return f"Toxiproxy did not report {facts['link']} disabled"
        if not ev.reached(evidence, GIVE_UP_WAIT):
            return (
                f"the worker did not log {GIVE_UP_LINE!r} within {GIVE_UP_S:.0f} s of the cut: "
                "the cut was shorter than n8n tolerates"
            )
        return None
