"""error_workflow_after_retries / error_workflow_after_worker_kill: how many times n8n runs
a workflow's Error Workflow when an execution fails.

The workflow is the probes' charge workflow whose ``settings.errorWorkflow`` names a second,
published workflow (``Error Trigger -> Record``: each of its runs commits one charge under
its own reference ``errorwf-<key>``, so its runs show at the provider as well as in its
execution rows). n8n 2.40 runs an Error Workflow only from its published version.
- ``error_workflow_after_retries``: the Charge node retries (2 tries, n8n's node setting)
  and the provider refuses both attempts (HTTP 500 before any commit): the node fails once
  its retries ran out, and the execution ends in error;
- ``error_workflow_after_worker_kill``: the provider holds the committed charge, the worker
  running the execution is SIGKILLed (a crashed execution); once n8n has finished the row,
  the killed worker is restarted (its recovery runs at start) and the stack is watched for
  further Error Workflow runs.
Answer: how many times the Error Workflow ran, and the failed execution's final status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from fake_providers.payment import FaultKind
from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, register, undetermined, vocabulary
from harness.findings.window import Held, hold_after_commit
from harness.findings.workflows import charge_workflow, error_recorder_workflow, with_node_retries
from harness.findings.world import FINISHED, WORKER_LINES, ProbeWorld
from harness.stack import n8n_db
from harness.workflow.deployment import with_error_workflow

if TYPE_CHECKING:
    from harness.stack.stack import Stack

TRIES = 2  # the Charge node's tries (n8n's retryOnFail / maxTries)
FINISH_S = 90.0  # the failed execution's row reaches a finished status (a stall sweep too)
ROW_S = 10.0  # the failed execution's row is sampled
FIRST_RUN_S = 30.0  # the Error Workflow's first run shows, once the execution finished
MORE_RUNS_S = 20.0  # after that (and after a restart): time for a further run
MORE_RUNS_WAIT = "a further Error Workflow run"
# n8n logs this (at error level) only when it could not start the Error Workflow.
CALL_FAILED_LINE = "Calling Error Workflow for"
# What a case's strike gives: (the failed execution, what only the run observed), or why the
# window was not reached.
Failed = tuple[str, dict[str, Any]] | str


@register("error_workflow_after_retries")
class ErrorWorkflowRuns(ProbeBase):
    case: ClassVar[str] = "retries_exhausted"
    # What a case observed beyond the common facts, shown as facts of its answer.
    extra_facts: ClassVar[tuple[str, ...]] = ()
    # True: a row n8n left unfinished after the case's waits is itself the answer.
    unfinished_is_an_answer: ClassVar[bool] = False
    needles: ClassVar[tuple[str, ...]] = (
        "error workflow",
        "errorWorkflow",
        "crashed",
        "recover",
        "stalled",
        *WORKER_LINES,
    )
    question = (
        "A node fails after its retries ran out (the provider refused every try): how many "
        "times does the workflow's Error Workflow run?"
    )
    answers = vocabulary(
        "Error Workflow ran {runs} time(s); execution ends {status}",
        runs=ev.COUNTS,
        status=ev.STATUSES,
    )

    def _workflows(self, path: str, error_reference: str) -> tuple[dict[str, Any], dict[str, Any]]:
        main = charge_workflow(self.name, path)
        if self.case == "retries_exhausted":
            main = with_node_retries(main, "Charge", TRIES)
        return main, error_recorder_workflow(self.name, error_reference)

    def workflow(self) -> dict[str, Any]:
        main, errors = self._workflows("probe-errorwf-KEY", "errorwf-KEY")
        # Shown in the report: the main workflow, naming the Error Workflow printed beside it.
        return with_error_workflow(main, "<the Error Workflow below>") | {
            "errorWorkflowShown": errors
        }

    def run(self, stack: Stack) -> Answer:
        with ProbeWorld(stack, "errorwf") as world:
            error_reference = f"errorwf-{world.key}"
            main, errors = self._workflows(f"probe-{world.key}", error_reference)
            error_workflow_id = stack.deploy(errors).id
            world.timeline.record("Error Workflow live", workflow=error_workflow_id)
            world.deploy(with_error_workflow(main, error_workflow_id))

            def error_runs() -> list[dict[str, Any]]:
                return n8n_db.execution_rows(stack.postgres_dsn, error_workflow_id)

            failed = self._fail(world)
            if isinstance(failed, str):
                return self.missed(world, failed)
            execution, observed = failed
            world.wait_for(
                "the Error Workflow's first run", lambda: bool(error_runs()), FIRST_RUN_S
            )
            runs_before = len(error_runs())
            world.wait_for(MORE_RUNS_WAIT, lambda: len(error_runs()) > runs_before, MORE_RUNS_S)
            world.wait_for(
                "the Error Workflow's runs to finish",
                lambda: all(r["status"] in FINISHED for r in error_runs()),
                FIRST_RUN_S,
            )
            return self.answered(
                world,
                execution=execution,
                error_workflow_id=error_workflow_id,
                error_workflow_rows=error_runs(),
                error_workflow_commits=[
                    {"effect_id": c.effect_id, "committed_at": c.committed_at}
                    for c in world.provider.commits(error_reference)
                ],
                observed=observed
                | {
                    "case": self.case,
                    # From the whole logs: the evidence keeps only their last matching lines.
                    "error_workflow_calls_failed": sum(
                        world.log_since(p.name).count(CALL_FAILED_LINE) for p in stack.n8n_processes
                    ),
                },
            )

    def _fail(self, world: ProbeWorld) -> Failed:
        """(the failed execution, what only the run could observe) once its row finished;
        or why the window was not reached."""
        world.provider.add_fault(
            FaultKind.ERROR_BEFORE_COMMIT, reference_prefix=world.key, attempts=range(1, TRIES + 1)
        )
        sender = world.send()
        if not world.wait_for("the sender's answer", sender.done, FINISH_S):
            return "the failing delivery got no answer"
        # The rows are sampled in the background: the answer may come before the sample.
        if not world.wait_for("the execution row", lambda: bool(world.rows()), ROW_S):
            return "no execution row for the failing delivery"
        execution = str(world.rows()[0]["id"])
        if not world.wait_finished("the execution to finish", execution, FINISH_S):
            return f"execution {execution} did not finish within {FINISH_S:.0f} s"
        return execution, {"sender": sender.seen()}

    @staticmethod
    def _finished(world: ProbeWorld, held: Held, wait: str, since: str, **observed: Any) -> Failed:
        """(the held execution, ``observed`` and what its sender saw) once its row finished
        (the timeline's ``wait``); or why not within FINISH_S ``since`` a strike."""
        execution = held.execution_id
        if not world.wait_finished(wait, execution, FINISH_S):
            return f"execution {execution} did not finish within {FINISH_S:.0f} s {since}"
        return execution, {**observed, "sender": held.sender.seen()}

    def _void(self, evidence: dict[str, Any], facts: dict[str, Any]) -> str | None:
        """Why the fault was not struck as the probe means it (the answer is then
        UNDETERMINED), or None. Each case checks its own proof."""
        del evidence
        if facts["case"] == "retries_exhausted" and facts["charge_attempts"] < TRIES:
            return (
                f"the provider saw {facts['charge_attempts']} attempt(s), not {TRIES}: the "
                "node's retries did not run out"
            )
        if facts["case"] == "worker_kill" and not facts["kill_proof"]:
            return "the worker running it did not end by SIGKILL"
        return None

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        seen = ev.observed(evidence)
        execution = evidence.get("execution")
        runs = list(evidence.get("error_workflow_rows") or [])
        recorded = list(evidence.get("error_workflow_commits") or [])
        final = ev.final_status(evidence, execution)
        path = ev.status_path(evidence, execution)
        attempts = ev.attempt_count(evidence)
        facts: dict[str, Any] = {
            "case": seen.get("case"),
            "execution": execution,
            "status_path": path,
            "error_workflow_runs": [(r["id"], r["status"]) for r in runs],
            "error_workflow_commits": len(recorded),
            "charge_attempts": attempts,
            "charge_commits": ev.commit_count(evidence),
            "sender": seen.get("sender"),
            "kill_proof": seen.get("kill_proof"),
            "status_before_restart": seen.get("status_before_restart"),
            "error_workflow_calls_failed": seen.get("error_workflow_calls_failed")
            or _calls_failed(evidence),
        }
        facts |= {name: seen.get(name) for name in self.extra_facts}
        if final not in FINISHED and not self.unfinished_is_an_answer:
            return undetermined(f"execution {execution} never finished (seen {final})", evidence)
        void = self._void(evidence, facts)
        if void is not None:
            return undetermined(void, evidence)
        # A run shows as an execution row; one whose Record step failed shows no commit, one
        # whose row n8n did not save shows only its commit: each is a run.
        count = max(len(runs), len(recorded))
        answer = f"Error Workflow ran {ev.count_word(count)} time(s); execution ends {final}"
        why = (
            f"execution {execution} went {' -> '.join(path)}; the Error "
            f"Workflow's executions {facts['error_workflow_runs']}, {len(recorded)} record(s) "
            f"at the provider; the Charge node: {facts['charge_attempts']} attempt(s), "
            f"{facts['charge_commits']} commit(s)"
        )
        if facts["error_workflow_calls_failed"]:
            why += (
                f"; n8n logged {facts['error_workflow_calls_failed']} failed call(s) of the "
                f"Error Workflow ({CALL_FAILED_LINE!r})"
            )
        return Answer(answer, why, facts, evidence)


@register("error_workflow_after_worker_kill")
class ErrorWorkflowAfterWorkerKill(ErrorWorkflowRuns):
    case = "worker_kill"
    question = (
        "The worker running an execution is SIGKILLed (a crashed execution, then the worker "
        "restarted and its recovery run): how many times does the workflow's Error Workflow "
        "run?"
    )

    def _fail(self, world: ProbeWorld) -> Failed:
        held = hold_after_commit(world)
        if isinstance(held, str):
            return held
        victim = world.stack.workers[held.worker]
        _, kill_proof = world.kill(victim)
        held.release(world)
        execution = held.execution_id
        # n8n may finish the row before the restart (the other worker's stall sweep) or
        # only at it (the restarted worker's recovery): both are waited for, then the
        # Error Workflow's runs are counted over the whole.
        world.wait_finished("the execution to finish", execution, FINISH_S)
        status_before_restart = world.status(execution)
        world.wait_for("the sender's answer", held.sender.done, FIRST_RUN_S)
        world.restart(victim)
        return self._finished(
            world,
            held,
            "the execution to finish (after the restart)",
            "of a restart",
            kill_proof=kill_proof,
            status_before_restart=status_before_restart,
        )


def _calls_failed(evidence: dict[str, Any]) -> int:
    """Log lines by which an n8n process said it could not start the Error Workflow (for
    evidence recorded before the run counted them)."""
    lines = (evidence.get("log_lines") or {}).values()
    return sum(CALL_FAILED_LINE in line for each in lines for line in each)
