"""The matrix is derived from what the plug-ins declare; expectations follow the promise."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.engine.crashpoints import get_crashpoint, known_crashpoints
from harness.engine.deliveries import get_delivery, known_deliveries
from harness.engine.deliveries.changed_payload import raised
from harness.engine.faults import get_fault, known_faults
from harness.errors import ConfigError
from harness.judge.oracle import Verdict
from harness.matrix.cases import CAUGHT, PASS, capabilities, matrix, not_run, pairs, scenarios
from harness.workflow.manifest import (
    BUNDLED_WORKFLOWS,
    EffectEndpoint,
    ErrorWorkflowSpec,
    NegativeControl,
    Promise,
    WorkflowUnderTest,
    discover,
)


def workflow(name: str = "pay", **overrides: Any) -> WorkflowUnderTest:
    base = WorkflowUnderTest(
        name=name,
        description="",
        promise=Promise.EXACTLY_ONCE,
        workflow={},
        method="POST",
        path=name,
        body_template={"order_id": "{key}", "amount": 1250},
        business_key="order_id",
        effect=EffectEndpoint.CHARGES,
        ledger_state_query="SELECT status FROM l WHERE k = %(key)s",
    )
    return dataclasses.replace(base, **overrides)


def ids(cases: list[Any]) -> set[str]:
    return {c.id for c in cases}


def test_every_registered_plugin_takes_part_in_some_scenario() -> None:
    found = scenarios()
    assert {s.delivery for s in found} == set(known_deliveries())
    assert {s.fault for s in found} == set(known_faults())
    assert {s.crashpoint for s in found} == set(known_crashpoints())


def test_the_control_case_comes_first_and_ids_are_unique() -> None:
    found = scenarios()
    assert found[0].id == "retry-no_fault-none"
    assert len({s.id for s in found}) == len(found)


def test_pairing_is_what_the_plugins_declare() -> None:
    retry, once = get_delivery("retry"), get_delivery("once")
    kill, down = get_fault("worker_kill"), get_fault("provider_down")
    after_commit, none = get_crashpoint("after_commit"), get_crashpoint("none")
    assert pairs(retry, kill, after_commit)
    assert not pairs(retry, kill, none)  # a kill needs a window
    assert not pairs(retry, down, none)  # provider_down asks for its own plan
    assert pairs(once, down, none)
    assert not pairs(get_delivery("concurrent"), kill, after_commit)
    assert pairs(get_delivery("operator_retry"), kill, after_commit)
    assert not pairs(get_delivery("operator_retry"), kill, get_crashpoint("before_send"))


def test_needs_filter_the_scenarios_of_a_workflow() -> None:
    plain = ids(matrix([workflow(ledger_state_query=None, body_template={"order_id": "{key}"})]))
    assert "pay-retry-worker_kill-in_ledger_write" not in plain
    assert "pay-changed_payload-no_fault-none" not in plain
    assert "pay-once-provider_down-none" not in plain
    full = ids(matrix([workflow(error_workflow=ErrorWorkflowSpec({}, "SELECT 1"))]))
    assert {
        "pay-retry-worker_kill-in_ledger_write",
        "pay-changed_payload-no_fault-none",
        "pay-once-provider_down-none",
    } <= full
    one_worker = ids(matrix([workflow()], workers=1))
    assert not any("worker_kill" in i or "worker_pause" in i for i in one_worker)


def test_races_repeat_by_default_and_repeat_overrides() -> None:
    cases = matrix([workflow()])
    concurrent = [c for c in cases if c.delivery == "concurrent"]
    assert [c.id for c in concurrent][:2] == [
        "pay-concurrent-no_fault-none-r1",
        "pay-concurrent-no_fault-none-r2",
    ]
    assert len(concurrent) == 5
    tripled = matrix([workflow()], repeat=3)
    assert len(tripled) == 3 * len({c.scenario.id for c in cases})
    with pytest.raises(ConfigError, match="--repeat 0"):
        matrix([workflow()], repeat=0)


def test_expectations_follow_the_promise() -> None:
    by_id = {c.scenario.id: c.expected for c in matrix([workflow()], repeat=1)}
    assert set(by_id.values()) == {PASS}
    naive = {c.scenario.id: c.expected for c in matrix([workflow(promise=Promise.NONE)], repeat=1)}
    assert naive["retry-no_fault-none"] == PASS
    assert naive["retry-worker_kill-before_send"] == PASS  # nothing committed before the kill
    # n8n mostly rides a blip out, but work ending while main reconnects may lose its answer
    assert naive["retry-redis_blip-after_commit"] == PASS | CAUGHT
    # n8n's connection monitor may or may not have its pool back when the answer is released
    assert naive["retry-postgres_cut-after_commit"] == PASS | CAUGHT
    assert naive["retry-worker_kill-after_commit"] == CAUGHT
    assert naive["concurrent-no_fault-none"] == CAUGHT
    assert naive["retry-response_drop-none"] == CAUGHT
    email = {
        c.scenario.id: c.expected
        for c in matrix([workflow(promise=Promise.AT_MOST_ONCE)], repeat=1)
    }
    assert email["retry-no_fault-none"] == PASS
    assert Verdict.DUPLICATE not in email["retry-worker_kill-after_commit"]
    assert Verdict.LOST in email["retry-worker_kill-after_commit"]  # a fault struck: allowed
    # No fault strikes: nothing excuses a missing effect (a concurrent copy, a late one).
    for quiet in ("concurrent-no_fault-none", "late-no_fault-none", "impatient-no_fault-none"):
        assert email[quiet] == PASS, quiet


def test_a_negative_control_runs_only_where_it_must_be_caught() -> None:
    broken = workflow(
        "broken",
        negative_control=NegativeControl("never charges", {"retry-no_fault-none": "NOT-DONE"}),
    )
    cases = matrix([broken])
    assert [(c.id, c.expected) for c in cases] == [
        ("broken-retry-no_fault-none", frozenset({Verdict.NOT_DONE}))
    ]


def test_the_manifests_scenarios_keep_only_those_it_names() -> None:
    narrow = workflow(scenarios=("retry-no_fault-none", "retry-worker_kill-*"))
    ids = {c.scenario.id for c in matrix([narrow])}
    assert "retry-no_fault-none" in ids and "retry-worker_kill-after_commit" in ids
    assert all(i == "retry-no_fault-none" or i.startswith("retry-worker_kill-") for i in ids)
    assert len(matrix([workflow()])) > len(matrix([narrow]))


def test_scenarios_naming_nothing_the_workflow_runs_is_refused() -> None:
    with pytest.raises(ConfigError, match="field 'scenarios': 'retry-nope-\\*' names no scenario"):
        matrix([workflow(scenarios=("retry-nope-*",))])


def test_a_negative_control_naming_an_unknown_scenario_is_refused() -> None:
    broken = workflow(negative_control=NegativeControl("x", {"retry-nope-none": "DUPLICATE"}))
    with pytest.raises(ConfigError, match="unknown scenario 'retry-nope-none'"):
        matrix([broken])


def test_a_negative_control_whose_scenario_needs_what_it_lacks_is_refused() -> None:
    broken = workflow(
        ledger_state_query=None,
        negative_control=NegativeControl("x", {"retry-worker_kill-in_ledger_write": "LOST"}),
    )
    with pytest.raises(ConfigError, match="needs ledger"):
        matrix([broken])


def test_concurrent_copies_overlap_is_read_from_execution_intervals() -> None:
    from harness.engine.deliveries.base import max_overlap

    apart = [
        {"started_at": 1.0, "stopped_at": 2.0},
        {"started_at": 2.5, "stopped_at": 3.0},
    ]
    assert max_overlap(apart) == 1
    together: list[dict[str, Any]] = [
        {"started_at": 1.0, "stopped_at": 3.0},
        {"started_at": 2.0, "stopped_at": 4.0},
        {"started_at": 2.5, "stopped_at": None},  # still running
        {"started_at": None, "stopped_at": None},  # never started
    ]
    assert max_overlap(together) == 3


def test_webhook_processor_faults_run_behind_a_webhook_processor() -> None:
    cases = {c.scenario.id: c for c in matrix([workflow(promise=Promise.NONE)], repeat=1)}
    for scenario in (
        "retry-webhook_processor_kill-after_commit",
        "retry-webhook_redis_cut-after_commit",
    ):
        case = cases[scenario]
        assert case.needs_webhook_processor
        assert case.expected == CAUGHT  # the answer is lost after the commit; the sender retries
    assert not cases["retry-main_kill-after_commit"].needs_webhook_processor


def test_concurrent_operator_retry_pairs_as_the_single_one() -> None:
    kill, after_commit = get_fault("worker_kill"), get_crashpoint("after_commit")
    both = get_delivery("concurrent_operator_retry")
    assert pairs(both, kill, after_commit)
    assert not pairs(both, kill, get_crashpoint("before_send"))
    assert not pairs(both, get_fault("webhook_processor_kill"), after_commit)


def test_opt_in_faults_run_only_where_the_manifest_names_them() -> None:
    plain = ids(matrix([workflow()], repeat=1))
    assert not any("silent" in case_id for case_id in plain)
    named = ids(matrix([workflow(production_faults=("provider_silent",))], repeat=1))
    assert named - plain == {"pay-retry-provider_silent-after_commit"}


def test_a_production_fault_that_is_not_opt_in_is_refused() -> None:
    with pytest.raises(ConfigError, match="'worker_kill' is not an opt-in fault; name one of"):
        matrix([workflow(production_faults=("worker_kill",))])


def test_the_matrix_is_built_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run`'s input check, the plugin's parametrize, its xdist scheduling and its batches
    read one matrix: a second ask for the same workflows builds nothing."""
    import shutil

    from harness.front import plugin
    from harness.front.options import ChaosOptions
    from harness.matrix import cases
    from harness.workflow.manifest import BUNDLED_WORKFLOWS

    root = tmp_path / "workflows"
    for name in ("payment_idempotent", "_ledgers"):  # with its shared ledger schema
        shutil.copytree(BUNDLED_WORKFLOWS / name, root / name)
    built: list[int] = []
    real = cases.matrix

    def counting(*args: Any, **kwargs: Any) -> list[cases.Case]:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cases, "matrix", counting)
    first, workflows = cases.matrix_of(root, workers=2)
    options = ChaosOptions.of({"workflows_dir": root, "workers": 2})
    for _ in range(3):  # parametrize, the scheduler, the batches
        assert plugin._matrix(options)[0] is first
    assert len(built) == 1 and [w.name for w in workflows] == ["payment_idempotent"]
    cases.matrix_of(root, workers=1)  # another stack shape is another matrix
    assert len(built) == 2


def test_a_string_amount_runs_the_changed_payload_and_what_is_not_run_says_why() -> None:
    """Shopify and PayPal send amounts as strings: the changed payload raises "49.90" to
    "149.90"; a workflow without a ledger hears which scenario wants one."""
    [bundled] = [w for w in discover(BUNDLED_WORKFLOWS) if w.name == "payment_naive"]
    body = {**bundled.body_template, "amount": "49.90"}
    shop = dataclasses.replace(bundled, body_template=body, ledger_state_query=None)
    assert "amount" in capabilities(shop)
    assert any(c.scenario.id.startswith("changed_payload-") for c in matrix([shop]))
    assert (raised("49.90"), raised(1250)) == ("149.90", 1350)
    wanting = not_run(shop)
    assert (
        "retry-worker_kill-in_ledger_write"
        in wanting["a `ledger` with a state query in its manifest"]
    )
    words = dataclasses.replace(shop, body_template={**body, "amount": "a lot"})
    assert "amount" not in capabilities(words)
    assert "changed_payload-no_fault-none" in " ".join(
        ids for wanted in not_run(words).values() for ids in wanted
    )
