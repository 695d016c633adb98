"""A naive workflow (promise none) is expected CAUGHT by a fault that loses the sender's
answer only where the answer is in fact lost: provider_slow where its calls time out before
the hang ends, after_response where its answer waits for the writes the window holds. A
Stripe node (no timeout) answered by a Respond to Webhook node right after it is answered
in time in both: DUPLICATE, LOST or PASS are all true there."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from harness.judge.oracle import Verdict
from harness.matrix.cases import CAUGHT, PASS, doubtful_catches, expected_for, scenarios
from harness.workflow.answer_timing import (
    answers_after_writes,
    answers_before_calls,
    call_timeout_s,
)
from harness.workflow.manifest import (
    BUNDLED_WORKFLOWS,
    NegativeControl,
    WorkflowUnderTest,
    discover,
)


def _node(name: str, type_: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": f"n8n-nodes-base.{type_}", "parameters": {}, **extra}


def _chain(*nodes: dict[str, Any]) -> dict[str, Any]:
    links = {
        a["name"]: {"main": [[{"node": b["name"], "type": "main", "index": 0}]]}
        for a, b in itertools.pairwise(nodes)
    }
    return {"nodes": list(nodes), "connections": links}


HOOK = _node("Order", "webhook")
STRIPE = _node("Charge", "stripe", credentials={"stripeApi": {"name": "Stripe account"}})
RESPOND = _node("Respond", "respondToWebhook")
LEDGER = _node("Record", "postgres", credentials={"postgres": {"name": "ledger"}})


def _http(timeout_ms: int | None) -> dict[str, Any]:
    options = {} if timeout_ms is None else {"timeout": timeout_ms}
    return {**_node("Call", "httpRequest"), "parameters": {"options": options}}


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        ([_http(10_000)], 10.0),
        ([_http(10_000), _http(20_000) | {"name": "Other"}], 20.0),  # the longest counts
        ([_http(None)], None),  # n8n's HTTP Request waits minutes unless told
        ([STRIPE], None),  # a service node without a timeout option
        ([_http(10_000), STRIPE], None),
        ([LEDGER], None),  # the ledger is the stack's own, not a service call
    ],
)
def test_the_call_timeout_is_the_longest_of_the_service_calls(
    nodes: list[dict[str, Any]], expected: float | None
) -> None:
    assert call_timeout_s({"nodes": [HOOK, *nodes]}) == expected


def test_the_answer_waits_for_the_writes_unless_a_respond_node_follows_the_call_freely() -> None:
    assert answers_after_writes(_chain(HOOK, STRIPE), "lastNode")
    assert not answers_after_writes(_chain(HOOK, STRIPE, RESPOND), "responseNode")
    assert answers_after_writes(_chain(HOOK, STRIPE, LEDGER, RESPOND), "responseNode")
    assert not answers_after_writes(_chain(HOOK, STRIPE, LEDGER), "onReceived")
    # The effect in a sub-workflow: its caller's answer follows the Execute Workflow node.
    call = _node("Checkout", "executeWorkflow")
    assert not answers_after_writes(_chain(HOOK, call, RESPOND), "responseNode")
    assert answers_after_writes(_chain(HOOK, call, LEDGER, RESPOND), "responseNode")
    assert not answers_after_writes(_chain(HOOK, RESPOND), "responseNode")  # no call seen


def test_a_respond_node_before_every_service_call_acknowledges_first() -> None:
    assert answers_before_calls(_chain(HOOK, RESPOND, STRIPE), "Order")
    assert answers_before_calls(_chain(HOOK, LEDGER, RESPOND, STRIPE), "Order")  # a claim first
    call = _node("Checkout", "executeWorkflow")
    assert answers_before_calls(_chain(HOOK, RESPOND, call), "Order")
    assert not answers_before_calls(_chain(HOOK, STRIPE, RESPOND), "Order")
    assert not answers_before_calls(_chain(HOOK, STRIPE, RESPOND, _http(None)), "Order")
    assert not answers_before_calls(_chain(HOOK, LEDGER, RESPOND), "Order")  # no call after it


def _respond(name: str, code: int | str) -> dict[str, Any]:
    return {**_node(name, "respondToWebhook"), "parameters": {"options": {"responseCode": code}}}


def test_a_respond_node_set_to_4xx_or_5xx_tells_the_sender_nothing_was_done() -> None:
    """An error branch's "retry later" right after the call does not answer before the
    writes, nor does a rejection before the call acknowledge first; a 2xx or an expression
    may be the answer."""
    retry = _respond("Retry", 503)
    flow = _chain(HOOK, STRIPE, LEDGER, RESPOND)
    # The service node's error output (its second) goes to the 503.
    flow["connections"]["Charge"]["main"].append([{"node": "Retry", "type": "main", "index": 0}])
    flow["nodes"].append(retry)
    assert answers_after_writes(flow, "responseNode")
    assert not answers_after_writes(_chain(HOOK, STRIPE, _respond("Ok", "201")), "responseNode")
    assert not answers_after_writes(
        _chain(HOOK, STRIPE, _respond("Any", "={{ 200 }}")), "responseNode"
    )
    assert not answers_before_calls(_chain(HOOK, _respond("Reject", 400), STRIPE), "Order")


def _naive(workflow: dict[str, Any], mode: str) -> WorkflowUnderTest:
    [bundled] = [w for w in discover(BUNDLED_WORKFLOWS) if w.name == "payment_naive"]
    early = mode == "onReceived"
    after = not early and answers_after_writes(workflow, mode)
    return dataclasses.replace(bundled, workflow=workflow, answers_after_writes=after)


def _expected(workflow: WorkflowUnderTest, scenario_id: str) -> frozenset[Verdict] | None:
    [scenario] = [s for s in scenarios() if s.id == scenario_id]
    return expected_for(workflow, scenario)


def test_a_naive_workflow_answered_in_time_may_pass_where_the_answer_is_not_lost() -> None:
    slow, after_response = "retry-provider_slow-none", "retry-worker_kill-after_response"
    in_time = _naive(_chain(HOOK, STRIPE, RESPOND), "responseNode")
    assert _expected(in_time, slow) == _expected(in_time, after_response) == PASS | CAUGHT
    bundled = _naive(_chain(HOOK, _http(10_000)), "lastNode")
    assert _expected(bundled, slow) == _expected(bundled, after_response) == CAUGHT
    # A redelivery catches it whatever the answer did.
    assert _expected(in_time, "late-no_fault-none") == CAUGHT


def test_a_control_caught_where_its_answer_cannot_be_lost_is_warned_about() -> None:
    """A negative control whose caught_by names after_response, though its answer does not
    wait for the writes that window holds: `list` warns that PASS comes there instead."""
    caught = {
        "retry-worker_kill-after_response": "DUPLICATE",
        "retry-response_drop-none": "DUPLICATE",
    }
    control = NegativeControl("no dedup", caught)
    early = dataclasses.replace(
        _naive(_chain(HOOK, STRIPE, RESPOND), "responseNode"), negative_control=control
    )
    [(needs, ids)] = doubtful_catches(early).items()
    assert ids == ["retry-worker_kill-after_response"] and "after n8n's and the ledger's" in needs
    late = dataclasses.replace(early, answers_after_writes=True)
    assert doubtful_catches(late) == {}
