"""The oracle's verdicts, one per rule, on plain data (no stack): what each verdict means and
which outranks which."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from harness.judge.oracle import AttemptRow, CommitRow, Evidence, Proof, Verdict, judge

LANDED = [Proof("crashpoint", "after_commit", True, "held by the provider, released by us")]
NOT_LANDED = [Proof("crashpoint", "after_commit", False, "no outside fact shows it landed")]


def commit(i: int = 0, reference: str = "order-1", effect: str = "charge") -> CommitRow:
    return CommitRow(f"ch_{i}", i + 1, 1000.0 + i, "pay:order-1", reference, effect)


def ok(effect_id: str | None = None, delivery: str = "d1") -> AttemptRow:
    return AttemptRow(delivery, "ok", 200, effect_id, changed_payload=delivery == "changed")


def fail(delivery: str = "d1") -> AttemptRow:
    return AttemptRow(delivery, "fail", 422, changed_payload=delivery == "changed")


INFO = AttemptRow("d1", "info", 503)


def evidence(**overrides: Any) -> Evidence:
    base = Evidence(
        key="order-1",
        promise="exactly_once",
        effect="charge",
        commits=[commit()],
        attempts=[ok()],
        proofs=LANDED,
        ledger_state="confirmed",
        ledger_done_state="confirmed",
        ledger_unknown_states=["claimed", "unknown"],
        ledger_failed_states=["failed", "needs_action"],
        execution_ids=["7", "8"],
    )
    return dataclasses.replace(base, **overrides)


CASES = {
    "exactly once, acknowledged, proven": (evidence(), Verdict.PASS),
    "two commits": (evidence(commits=[commit(0), commit(1)]), Verdict.DUPLICATE),
    "one event of two line items, each once": (
        evidence(commits=[commit(0), commit(1)], effects_per_event=2),
        Verdict.PASS,
    ),
    "two line items, one charged twice": (
        evidence(commits=[commit(0), commit(1), commit(2)], effects_per_event=2),
        Verdict.DUPLICATE,
    ),
    "two line items, a 2xx and one never charged": (
        evidence(commits=[commit(0)], effects_per_event=2),
        Verdict.LOST,
    ),
    "two line items, one never charged, the sender never told": (
        evidence(commits=[commit(0)], attempts=[INFO] * 6, effects_per_event=2, ledger_state=None),
        Verdict.NOT_DONE,
    ),
    "2xx and nothing committed": (
        evidence(commits=[], ledger_state=None),
        Verdict.LOST,
    ),
    "2xx, ledger done, nothing committed: LOST first": (evidence(commits=[]), Verdict.LOST),
    "never performs the effect, never acknowledges": (
        evidence(commits=[], attempts=[INFO] * 6, ledger_state=None),
        Verdict.NOT_DONE,
    ),
    "a stored decline is not NOT-DONE": (
        evidence(commits=[], attempts=[fail()], ledger_state="failed", declined=True),
        Verdict.PASS,
    ),
    "told 'failed' while it committed": (
        evidence(attempts=[fail()], ledger_state="failed"),
        Verdict.CONTRADICTED,
    ),
    "a 2xx naming another effect": (evidence(attempts=[ok("ch_other")]), Verdict.CONTRADICTED),
    "a 2xx to a changed payload never committed": (
        evidence(attempts=[ok(), ok(delivery="changed")]),
        Verdict.CONTRADICTED,
    ),
    "a changed payload an upsert applied to the original's record is no lie": (
        evidence(attempts=[ok(), ok(delivery="changed")], updated_effects=["ch_0"]),
        Verdict.PASS,
    ),
    "an early 'accepted' to a changed payload is no lie": (
        evidence(attempts=[ok(), ok(delivery="changed")], acknowledges_early=True),
        Verdict.PASS,
    ),
    "a changed payload rejected definitely": (
        evidence(attempts=[ok(), fail("changed")]),
        Verdict.PASS,
    ),
    "ledger done with no commit": (
        evidence(commits=[], attempts=[INFO]),
        Verdict.CONTRADICTED,
    ),
    "ledger failed with a commit": (
        evidence(attempts=[INFO], ledger_state="failed"),
        Verdict.CONTRADICTED,
    ),
    "another reference committed in the window": (
        evidence(stray_commits=[commit(5, reference="order-1-typo")]),
        Verdict.STRAY,
    ),
    "ledger still unknown": (
        evidence(attempts=[INFO], ledger_state="unknown"),
        Verdict.UNRECONCILED,
    ),
    "committed, the sender heard only 'retry', no ledger row": (
        evidence(attempts=[INFO] * 6, ledger_state=None),
        Verdict.UNRECONCILED,
    ),
    "committed, the sender heard only 'retry', the ledger says done": (
        evidence(attempts=[INFO] * 6),
        Verdict.PASS,
    ),
    "at most once: committed, the sender heard only 'retry', no ledger row": (
        evidence(promise="at_most_once", attempts=[INFO] * 6, ledger_state=None),
        Verdict.PASS,
    ),
    "error workflow ran once, ledger actionable": (
        evidence(
            commits=[],
            attempts=[INFO],
            effect_possible=False,
            error_workflow_runs=1,
            ledger_state="needs_action",
        ),
        Verdict.PASS,
    ),
    "error workflow ran twice": (
        evidence(
            commits=[],
            attempts=[INFO],
            effect_possible=False,
            error_workflow_runs=2,
            ledger_state="needs_action",
        ),
        Verdict.UNHANDLED,
    ),
    "error workflow left the ledger unknown": (
        evidence(
            commits=[],
            attempts=[INFO],
            effect_possible=False,
            error_workflow_runs=1,
            ledger_state="claimed",
        ),
        Verdict.UNHANDLED,
    ),
    "never settled": (
        evidence(commits=[], attempts=[INFO], settled=False, live_executions=["9"]),
        Verdict.STUCK,
    ),
    "a duplicate outranks never settling": (
        evidence(commits=[commit(0), commit(1)], settled=False),
        Verdict.DUPLICATE,
    ),
    "the fault did not land, promise held": (evidence(proofs=NOT_LANDED), Verdict.NO_EVIDENCE),
    "a stall no fault provoked outranks even a violation": (
        evidence(
            commits=[commit(0), commit(1)],
            proofs=[*LANDED, Proof("stack", "unprovoked stall", False, "starved")],
        ),
        Verdict.NO_EVIDENCE,
    ),
    "a violation outranks NO-EVIDENCE": (
        evidence(commits=[], ledger_state=None, proofs=NOT_LANDED),
        Verdict.LOST,
    ),
    "at most once: nothing done is no violation": (
        evidence(promise="at_most_once", commits=[], attempts=[INFO], ledger_state=None),
        Verdict.PASS,
    ),
    "acknowledged by one copy, refused by another": (
        evidence(attempts=[ok(delivery="dup1"), fail("dup2")]),
        Verdict.PASS,
    ),
}


@pytest.mark.parametrize(("case", "verdict"), CASES.values(), ids=CASES.keys())
def test_verdicts(case: Evidence, verdict: Verdict) -> None:
    assert judge(case).verdict is verdict


def test_a_violation_that_outranks_no_evidence_says_the_fault_did_not_land() -> None:
    text = judge(evidence(commits=[], ledger_state=None, proofs=NOT_LANDED)).explanation
    assert "not proven to land" in text and "no outside fact" in text


def test_a_duplicate_names_the_key_the_commits_and_the_executions() -> None:
    text = judge(evidence(commits=[commit(0), commit(1)])).explanation
    assert "order-1" in text and "ch_0" in text and "ch_1" in text and "'7'" in text


def test_a_pass_names_its_proof() -> None:
    assert "released by us" in judge(evidence()).explanation


def test_stuck_names_the_live_executions() -> None:
    text = judge(evidence(commits=[], settled=False, live_executions=["41", "42"])).explanation
    assert "41, 42" in text


def test_evidence_round_trips_through_json() -> None:
    original = evidence(stray_commits=[commit(3, "x")], attempts=[ok("ch_0"), fail("changed")])
    assert Evidence.from_json(original.to_json()) == original


def test_every_verdict_but_pass_and_no_evidence_is_a_violation() -> None:
    assert {v for v in Verdict if not v.violation} == {Verdict.PASS, Verdict.NO_EVIDENCE}


def test_with_nothing_broken_a_naive_workflow_must_still_do_its_work() -> None:
    """The control case: promise "none" is no licence to do nothing."""
    quiet = evidence(promise="none", commits=[], attempts=[fail()], control=True, ledger_state=None)
    assert judge(quiet).verdict is Verdict.NOT_DONE
    faulted = evidence(promise="none", commits=[], attempts=[fail()], ledger_state=None)
    assert judge(faulted).verdict is not Verdict.NOT_DONE


def test_a_workflow_failing_on_its_own_is_named_not_a_harness_error() -> None:
    failing = evidence(
        promise="none",
        commits=[],
        attempts=[fail()],
        proofs=[Proof("fault", "worker_kill", False, "no outside fact shows it landed")],
        node_failures=["execution 7: node 'Create order page' failed: boom"],
        ledger_state=None,
    )
    judgement = judge(failing)
    assert judgement.verdict is Verdict.NOT_DONE
    assert "'Create order page' failed: boom" in judgement.explanation


def test_two_effects_of_different_kinds_are_not_a_duplicate() -> None:
    both = evidence(commits=[commit(0, effect="customer"), commit(1, effect="payment_intent")])
    assert judge(both).verdict is not Verdict.DUPLICATE
    twice = evidence(
        commits=[commit(0, effect="payment_intent"), commit(1, effect="payment_intent")]
    )
    assert judge(twice).verdict is Verdict.DUPLICATE


def test_commits_with_keys_of_their_own_hint_at_line_items() -> None:
    keyed = [dataclasses.replace(commit(i), idempotency_key=f"pay:order-1:{i}") for i in (0, 1)]
    why = judge(evidence(commits=keyed)).explanation
    assert why.startswith("2 charge commits for one business event (each with its own")
    assert "say so in the manifest's effects_per_event" in why
    assert "effects_per_event" not in judge(evidence(commits=[commit(0), commit(1)])).explanation
    three = judge(evidence(commits=[commit(0), commit(1), commit(2)], effects_per_event=2))
    assert three.explanation.startswith("3 charge commits for one business event that makes 2")


def test_a_stray_whose_reference_holds_the_key_says_to_give_the_reference_a_regex() -> None:
    inside = judge(
        evidence(commits=[], stray_commits=[commit(5, reference="New order order-1\n_")])
    )
    assert inside.verdict is Verdict.STRAY
    assert "holds the case's key order-1 inside a longer value" in inside.explanation
    other = judge(evidence(commits=[], stray_commits=[commit(5, reference="order-2")]))
    assert other.verdict is Verdict.STRAY and "regex" not in other.explanation


def test_a_2xx_with_no_commit_is_lost_and_names_the_ledger_that_agrees_with_it() -> None:
    lost = judge(evidence(commits=[]))
    assert lost.verdict is Verdict.LOST
    assert "nothing was committed (and the ledger says 'confirmed')" in lost.explanation
    quiet = judge(evidence(commits=[], ledger_state=None))
    assert "ledger" not in quiet.explanation.split(";")[0]


def test_not_done_names_what_the_provider_refused_as_bad() -> None:
    """A refund of a charge the provider does not hold: every try a 404, no decline."""
    refused = judge(
        evidence(
            commits=[],
            attempts=[INFO] * 3,
            ledger_state=None,
            rejections=["404 No such charge: 'ch_1'"],
        )
    )
    assert refused.verdict is Verdict.NOT_DONE
    assert "refused its requests as bad (404 No such charge: 'ch_1')" in refused.explanation
    assert "never declined" not in refused.explanation
