"""concurrent_operator_retry: two operators press "retry" on the same failed execution at
the same instant, through n8n's public API (``POST /api/v1/executions/{id}/retry``).

The execution to retry is made the way operators meet it:
- ``concurrent_operator_retry``: crashed: the worker running it was SIGKILLed after the
  provider committed the charge (as ``recovery_after_commit``), and n8n gave up on it;
- ``concurrent_operator_retry_node_error``: failed: the provider refused the first charge
  (HTTP 500 before any commit) and the Charge node, with no node retries, failed.
The two retry calls are lined up on a thread barrier. Answer: how many new executions n8n
started (rows with ``retryOf`` = the execution) and how many charges the retries committed.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, ClassVar

from fake_providers.payment import FaultKind
from harness.errors import HarnessError
from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, undetermined, vocabulary
from harness.findings.window import hold_after_commit
from harness.findings.world import FINISHED, WORKER_LINES, ProbeWorld
from harness.stack.n8n_api import N8nApi

if TYPE_CHECKING:
    from harness.stack.stack import Stack

FAIL_S = 90.0  # the origin execution reaches a finished status
SETTLE_S = 60.0  # the retries finish
RETRY_CALL_S = 30.0
ROW_S = 10.0  # the failing delivery's row is sampled


class ConcurrentOperatorRetry(ProbeBase):
    origin: ClassVar[str] = "worker_kill"  # the case (below): how the execution to retry failed
    answers = vocabulary(
        "{executions} new execution(s); {commits} charge(s) by the retries",
        executions=ev.COUNTS,
        commits=ev.COUNTS,
    )
    short = "retry"
    needles = ("crashed", "recover", "stalled", *WORKER_LINES)

    def run(self, stack: Stack) -> Answer:
        with self.world(stack) as world:
            origin = self._failed_execution(world)
            if origin.startswith("!"):
                return self.missed(world, origin[1:])
            return self._retry_twice(world, origin)

    def _failed_execution(self, world: ProbeWorld) -> str:
        """The id of an execution n8n finished as failed, or "!" and why not."""
        execution: str | None
        if self.origin == "node_error":
            world.provider.add_fault(
                FaultKind.ERROR_BEFORE_COMMIT, reference_prefix=world.key, attempts=(1,)
            )
            sender = world.send()
            if not world.wait_for("the sender's answer", sender.done, FAIL_S):
                return "!the failing delivery got no answer"
            # The rows are sampled in the background: the answer may come before the sample
            # (2.33.7's run once found none here).
            world.wait_for("the execution row", lambda: bool(world.rows()), ROW_S)
            rows = world.rows()
            execution = str(rows[0]["id"]) if rows else None
        else:
            held = hold_after_commit(world)
            if isinstance(held, str):
                return "!" + held
            victim = world.stack.workers[held.worker]
            world.kill(victim)
            held.release(world)
            execution = held.execution_id
            world.restart(victim)
        if execution is None:
            return "!no execution row for the failing delivery"
        if not world.wait_finished("the execution to finish as failed", execution, FAIL_S):
            return f"!execution {execution} did not finish within {FAIL_S:.0f} s"
        if world.status(execution) == "success":
            return f"!execution {execution} succeeded: nothing for an operator to retry"
        return execution

    def _retry_twice(self, world: ProbeWorld, origin: str) -> Answer:
        stack = world.stack
        assert stack.owner is not None
        commits_before = len(world.commits())
        line_up = threading.Barrier(2, timeout=RETRY_CALL_S)
        calls: list[dict[str, Any]] = [{}, {}]

        def retry(slot: int) -> None:
            api = N8nApi(stack.main.base_url, stack.owner.api_key, timeout_s=RETRY_CALL_S)  # type: ignore[union-attr]
            try:
                line_up.wait()
                calls[slot]["sent_at"] = world.timeline.now()
                made = api.retry_execution(origin)
                calls[slot] |= {"accepted": True, "execution": str(made.get("id"))}
            except (HarnessError, threading.BrokenBarrierError, OSError) as exc:
                calls[slot] |= {"accepted": False, "error": str(exc)[:300]}
            finally:
                calls[slot]["answered_at"] = world.timeline.now()
                api.close()

        threads = [threading.Thread(target=retry, args=(i,), daemon=True) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(RETRY_CALL_S * 2)
        world.timeline.record("operator retries answered", calls=calls)

        def retries() -> list[dict[str, Any]]:
            return [r for r in world.rows() if r.get("retry_of") == origin]

        accepted = sum(1 for c in calls if c.get("accepted"))
        world.wait_for(
            "the retries' executions to appear and finish",
            lambda: len(retries()) >= accepted and all(r["status"] in FINISHED for r in retries()),
            SETTLE_S,
        )
        observed = {"origin": self.origin, "commits_before_retries": commits_before}
        return self.answered(world, origin_execution=origin, retry_calls=calls, observed=observed)

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        seen = ev.observed(evidence)
        origin = str(evidence.get("origin_execution"))
        calls: list[dict[str, Any]] = list(evidence.get("retry_calls") or [])
        made = [r for r in ev.rows(evidence) if r.get("retry_of") == origin]
        commits_before = int(seen.get("commits_before_retries") or 0)
        by_retries = ev.commit_count(evidence) - commits_before
        facts = {
            "origin": seen.get("origin"),
            "origin_execution": origin,
            "origin_status": ev.final_status(evidence, origin),
            "origin_status_path": ev.status_path(evidence, origin),
            "retry_calls_accepted": sum(1 for c in calls if c.get("accepted")),
            "retry_executions": [(r["id"], r["status"]) for r in made],
            "commits_before_retries": commits_before,
            "commits_by_retries": by_retries,
            "calls_overlapped": ev.overlapped(calls),
        }
        if not facts["calls_overlapped"]:
            return undetermined("the two retry calls did not overlap in time", evidence)
        answer = (
            f"{ev.count_word(len(made))} new execution(s); "
            f"{ev.count_word(by_retries)} charge(s) by the retries"
        )
        why = (
            f"execution {origin} ({facts['origin_status']}) retried twice at once: n8n "
            f"accepted {facts['retry_calls_accepted']} call(s), made executions "
            f"{facts['retry_executions']}, the provider committed {by_retries} more charge(s)"
        )
        return Answer(answer, why, facts, evidence)


ConcurrentOperatorRetry.register_case(
    "concurrent_operator_retry",
    "Two operator retries of the same crashed execution (its worker SIGKILLed after the "
    "charge committed) at once through the public API: how many new executions, how "
    "many charges?",
)
ConcurrentOperatorRetry.register_case(
    "concurrent_operator_retry_node_error",
    "Two operator retries of the same failed execution (its Charge node got HTTP 500, "
    "nothing committed) at once through the public API: how many new executions, how "
    "many charges?",
    origin="node_error",
)
