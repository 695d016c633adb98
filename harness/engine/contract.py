"""The plug-in contract: what a crash point or a delivery plan may read and do during a case.

Plug-ins act on a ``CaseWorld``, never on the engine's own types:
``harness.engine.case_run.CaseRun`` implements it, and a plug-in module imports nothing from
``harness.engine.case_run``, ``harness.matrix.cases`` or ``harness.engine.runner``
(``tests/unit/test_plugin_contract.py`` checks it). Faults keep their own narrower view,
``harness.engine.faults.base.FaultContext``.

How plug-ins pair is declared as traits (plain strings, checked against every registered
plug-in when the matrix is built; see ``harness.engine.registry.check_pairings``):

- a crash point ``offers`` traits of its window (``planted``: the fault is in place before
  the delivery; ``in_flight``: the effect request is on its way; ``committed``: the provider
  committed; ``response_held``: the committed answer is held while the fault strikes);
- a fault ``offers`` traits of itself (``quiet``: nothing breaks; ``worker_crash``...),
  ``needs_window`` the traits its crash point must offer, and ``needs_plan`` the traits its
  delivery plan must offer;
- a delivery plan ``offers`` traits of itself (``baseline``: the plain sender;
  ``no_sender_retry``...) and ``accepts`` the fault and crash point combinations it runs
  with: None (any fault that does not ask for its own plan), or trait sets, one of which
  the fault's and the crash point's offers together must contain.

``needs`` (on every plug-in) names what the workflow or stack must offer (see
``WORKFLOW_CAPABILITIES``).

``shares_stack`` (a bool on every plug-in, False unless the plug-in's own file says True)
declares that the plug-in touches nothing of the stack that another case uses: no process,
no Toxiproxy link, no stack-wide provider state (a fault plan or barrier for the case's own
reference is fine; forgetting every idempotency key is not). A case whose fault, crash point
and delivery plan all share runs beside other such cases of its workflow on one stack
(``harness.engine.batch``); any other case takes the stack alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from fake_providers.payment import ProviderControl
    from harness.engine.journal import Journal
    from harness.engine.settle import SettleResult
    from harness.engine.workload import BackgroundDelivery, DeliveryAttempt
    from harness.stack.toxiproxy import Proxy

# A condition a wait polls (true: done).
Check = Callable[[], bool]

# What a workflow (and the stack it runs on) can offer to plug-ins' ``needs``, each with what
# gives it (`n8n-chaos list` says so of a scenario a workflow does not run for want of it).
WORKFLOW_CAPABILITIES: Mapping[str, str] = {
    "ledger": "a `ledger` with a state query in its manifest",
    "amount": 'a numeric `amount` in its trigger body: a number, or a string such as "49.90"',
    "reconciler": "a `reconciler` in its manifest",
    "error_workflow": "an `error_workflow` in its manifest",
    "second_worker": "a stack of 2 workers or more",
    "sync_answer": "a webhook that answers after the work, not on receipt",
    # The harness starts one (beside the session's stack) for the cases that need it.
    "webhook_processor": "a stack whose webhooks go through `n8n webhook`",
    # Such a workflow runs only the plans that call its resume URL.
    "wait_resume": "a Wait node holding each execution until the resume URL its answer"
    " hands out is called",
    "idempotency_key": "an idempotency key on its effect requests, so the service can answer"
    " 'in flight'",
    # n8n cancels a run past it while the harness holds the committed answer.
    "execution_timeout": "an execution timeout of at most 7 s in its settings",
    # Only then does the slow answer (provider_slow's hang) cost the sender its answer.
    "call_timeout": "service calls that time out before a slow answer comes",
    # A window that holds those writes holds the answer too.
    "answer_after_write": "an answer sent only after n8n's and the ledger's writes: the last"
    " node's data, or a Respond to Webhook node behind a Postgres node",
}


class CaseWorld(Protocol):
    """One running case, as a crash point or a delivery plan sees it."""

    key: str  # the business key of the case
    body: dict[str, Any]  # the trigger body as first sent
    journal: Journal

    @property
    def effect(self) -> str:
        """The provider effect kind the workflow performs (charge | email | ...)."""
        ...

    @property
    def provider(self) -> ProviderControl:
        """The fake provider's control client: barriers, fault plan, attempts, commits."""
        ...

    @property
    def ledger_dsn(self) -> str: ...

    def write_links(self, worker: int) -> list[Proxy]:
        """The Toxiproxy links a worker (by index) writes its results through: its own link
        to n8n's Postgres and the ledger's."""
        ...

    # -- sending ------------------------------------------------------------------------
    def start_delivery(
        self, retry: bool = True, attempt_timeout_s: float | None = None
    ) -> BackgroundDelivery: ...

    def start_concurrent(self, copies: int) -> BackgroundDelivery: ...

    def start_work(self, work: Callable[[], object]) -> BackgroundDelivery:
        """``work`` (a plan's own sequence of deliveries) in the background."""
        ...

    def call(self, url: str, body: dict[str, Any], delivery: str) -> DeliveryAttempt:
        """One POST to a URL the workflow handed out (a Wait node's resume URL), recorded in
        the sender's history as an attempt of ``delivery``; never retried."""
        ...

    def deliver(
        self, body: dict[str, Any] | None = None, delivery: str = "d1", retry: bool = True
    ) -> DeliveryAttempt:
        """Send now; a ``body`` other than the original marks the delivery a changed payload."""
        ...

    def attempts(self, delivery: str | None = None) -> list[DeliveryAttempt]: ...

    def keys_expired(self) -> AbstractContextManager[None]:
        """The provider forgets every completed idempotency key for the block."""
        ...

    def workers_held(self) -> AbstractContextManager[bool]:
        """n8n's workers frozen for the block (SIGSTOP; a container's freezer), so the jobs
        queued meanwhile wait as a backlog does and are picked up together on leaving it.
        Only a case alone on its stack holds (a hold must not delay a neighbour's
        executions): the block gets True when it held, False beside others."""
        ...

    def retry_execution(self, execution_id: str) -> Mapping[str, Any]:
        """An operator's retry through n8n's public API (a refusal raises a HarnessError)."""
        ...

    # -- the fault ----------------------------------------------------------------------
    def inject(self) -> None: ...

    def wait_timed_heal(self, at_most_s: float | None = None) -> bool: ...

    # -- observation --------------------------------------------------------------------
    def executions(self) -> list[dict[str, Any]]: ...

    def failures(self, rows: list[dict[str, Any]]) -> list[str]:
        """What n8n says stopped each failed execution among ``rows`` (its node and error)."""
        ...

    def wait_for(
        self, what: str, probe: Check, deadline_s: float, give_up: Check | None = None
    ) -> bool: ...

    def work_over(self, delivery: BackgroundDelivery | None = None) -> bool: ...

    def wait_running_execution(self, deadline_s: float, give_up: Check) -> str | None: ...

    def find_target(self, execution_id: str, deadline_s: float = 30.0) -> int | None: ...

    def settle(self, deadline_s: float, why: str) -> SettleResult: ...
