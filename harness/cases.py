"""The matrix: case = workflow x fault x crash point x expected verdicts. Expectations are
data: exactly-once workflows must PASS every case that applies; the naive workflow must be
CAUGHT (DUPLICATE or LOST) where the seed articles say it breaks; at-most-once workflows
must never duplicate."""

from __future__ import annotations

from dataclasses import dataclass

from harness.faults import Fault, get_fault
from harness.manifest import WorkflowUnderTest
from harness.oracle import Verdict

PASS = frozenset({Verdict.PASS})
CAUGHT = frozenset({Verdict.DUPLICATE, Verdict.LOST})
AT_MOST_ONCE = frozenset({Verdict.PASS, Verdict.LOST, Verdict.UNRECONCILED})


@dataclass(frozen=True)
class Scenario:
    fault: str
    crashpoint: str
    # What a workflow that promises nothing (the naive one) is expected to show here.
    naive_expected: frozenset[Verdict] = PASS
    needs_ledger: bool = False


# The scenarios every workflow runs through (filtered by what applies to it).
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("no_fault", "none"),
    Scenario("worker_kill", "before_send"),
    Scenario("worker_kill", "after_commit", CAUGHT),
    Scenario("worker_kill", "after_response", CAUGHT),
    Scenario("worker_kill", "in_ledger_write", needs_ledger=True),
    Scenario("worker_pause", "after_commit", CAUGHT),
    Scenario("main_kill", "after_commit", CAUGHT),
    Scenario("response_drop", "none", CAUGHT),
    Scenario("provider_slow", "none", CAUGHT),
    Scenario("provider_5xx", "none", CAUGHT),
    Scenario("concurrent_duplicates", "none", CAUGHT),
    Scenario("late_redelivery", "after_completion", CAUGHT),
    Scenario("late_redelivery", "after_ttl", CAUGHT),
    # n8n 2.40.7 ends the retry of an execution whose worker died at once as `error`
    # without running a node (a finding, journaled); the operator then re-sends the event.
    Scenario("operator_retry", "after_commit", CAUGHT),
    # Redis gone for 2 s while the provider holds its committed response (released once
    # Redis is back): n8n rides it out. (Released *during* the blip, n8n 2.40.7 sometimes
    # left the synchronous caller without an answer for 30 s although the execution
    # succeeded: a finding, not deterministic enough for a case.)
    Scenario("redis_blip", "after_commit"),
    # Redis gone for longer than n8n's 10 s threshold: main and workers exit by design;
    # the caller's connection dies with main, the heal restarts everything.
    Scenario("redis_outage", "after_commit", CAUGHT),
    # Finding (n8n 2.40.7): after an 8 s cut of the worker's and main's Postgres links the
    # execution stayed `running` for good and the webhook caller got no answer; the
    # sender's retry charges twice.
    Scenario("postgres_cut", "after_commit", CAUGHT),
)


@dataclass(frozen=True)
class Case:
    workflow: str
    fault: str
    crashpoint: str
    expected: frozenset[Verdict]

    @property
    def id(self) -> str:
        return f"{self.workflow}-{self.fault}-{self.crashpoint}"

    def make_fault(self) -> Fault:
        return get_fault(self.fault)


def expected_for(workflow: WorkflowUnderTest, scenario: Scenario) -> frozenset[Verdict]:
    if workflow.promise == "exactly_once":
        return PASS
    if workflow.promise == "at_most_once":
        return AT_MOST_ONCE
    return scenario.naive_expected


def matrix(workflows: list[WorkflowUnderTest]) -> list[Case]:
    cases = []
    for workflow in workflows:
        for scenario in SCENARIOS:
            if scenario.needs_ledger and workflow.ledger_state_query is None:
                continue
            cases.append(
                Case(
                    workflow.name,
                    scenario.fault,
                    scenario.crashpoint,
                    expected_for(workflow, scenario),
                )
            )
    return cases
