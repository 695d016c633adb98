"""The timeline of a case from its saved evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.report.timeline import LANES, Window, events, fault_windows, render

T0 = 1_000.0


def evidence_doc() -> dict[str, Any]:
    return {
        "case": "payment_naive-retry-worker_kill-after_commit",
        "started_at": T0,
        "phases": [
            {"name": "prepare", "started_at": T0, "ended_at": T0 + 0.1},
            {"name": "deliver", "started_at": T0 + 0.1, "ended_at": T0 + 2.0},
            {"name": "settle", "started_at": T0 + 9.0, "ended_at": None},
        ],
        "history": [
            {
                "delivery": "d1",
                "number": 1,
                "started_at": T0 + 0.2,
                "ended_at": T0 + 5.0,
                "outcome": "info",
                "status": None,
                "detail": "ReadTimeout: timed out",
            },
            {
                "delivery": "d1",
                "number": 2,
                "started_at": T0 + 6.0,
                "ended_at": T0 + 6.5,
                "outcome": "ok",
                "status": 200,
                "detail": "{}",
            },
        ],
        "journal": [
            {
                "at": T0 + 1.0,
                "kind": "fault.inject",
                "what": "worker_kill",
                "data": {"worker": "worker0", "pid": 42},
            },
            {
                "at": T0 + 4.0,
                "kind": "fault.heal",
                "what": "worker_kill",
                "data": {"ready_s": 2.9876, "body": "a long reconciler answer"},
            },
        ],
        "intercepted": [
            {
                "time": T0 + 0.5,
                "listener": "worker0",
                "method": "GET",
                "scheme": "https",
                "host": "api.pipedrive.com",
                "path": "/v1/deals/search?term=Order%201",
                "status": 200,
                "outcome": "forwarded",
            },
            {
                "time": T0 + 0.6,
                "listener": "worker0",
                "method": "POST",
                "scheme": "https",
                "host": "crm.example.org",
                "path": "/api/x",
                "status": 502,
                "outcome": "refused",
            },
        ],
        "provider_attempts": [
            {
                "attempt_no": 1,
                "effect": "charge",
                "idempotency_key": None,
                "outcome": "committed",
                "http_status": 200,
                "received_at": T0 + 0.8,
                "finished_at": T0 + 1.5,
            },
        ],
        "executions": [
            {
                "id": "7",
                "status": "crashed",
                "mode": "webhook",
                "retry_of": None,
                "started_at": T0 + 0.5,
                "stopped_at": None,
            },
        ],
        "evidence": {
            "commits": [
                {
                    "effect_id": "ch_1",
                    "committed_at": T0 + 0.9,
                    "reference": "k",
                    "effect": "charge",
                    "attempt_no": 1,
                    "idempotency_key": None,
                }
            ],
            "stray_commits": [
                {
                    "effect_id": "ch_9",
                    "committed_at": T0 + 6.2,
                    "reference": "typo",
                    "effect": "charge",
                    "attempt_no": 2,
                    "idempotency_key": None,
                }
            ],
        },
    }


def test_every_lane_is_there_in_time_order_from_the_case_start() -> None:
    found = events(evidence_doc())
    assert {e.lane for e in found} == set(LANES)
    assert [e.at for e in found] == sorted(e.at for e in found)
    assert found[0].at == 0.0 and found[0].label == "prepare"


def test_the_senders_attempts_carry_their_outcome_and_interval() -> None:
    sender = [e for e in events(evidence_doc()) if e.lane == "sender"]
    assert [(e.label, e.outcome) for e in sender] == [
        ("d1 #1: ReadTimeout: timed out", "info"),
        ("d1 #2: HTTP 200", "ok"),
    ]
    assert sender[0].duration == pytest.approx(4.8)


def test_provider_commits_and_stray_commits_are_told_apart() -> None:
    provider = [e for e in events(evidence_doc()) if e.lane == "provider"]
    assert [e.outcome for e in provider] == ["committed", "committed", "stray"]
    assert "ref 'typo'" in provider[-1].label
    assert "ref" not in provider[1].label


def test_a_stray_commit_with_an_empty_reference_says_where_it_was_looked_for() -> None:
    """An upstream fake's attempt keeps where the reference was read, what was there when
    it is empty, and a masked preview of the body: the timeline shows all three."""
    doc = evidence_doc()
    doc["provider_attempts"].append(
        {
            "attempt_no": 1,
            "effect": "record",
            "idempotency_key": None,
            "reference": "",
            "effect_id": "rec_5",
            "outcome": "committed",
            "http_status": 201,
            "received_at": T0 + 6.0,
            "finished_at": T0 + 6.3,
            "preview": '{"order":{"ref":"k"}}',
            "reference_note": "json /order/id: absent (top-level fields: order)",
        }
    )
    doc["evidence"]["stray_commits"][0].update(effect_id="rec_5", reference="", effect="record")
    provider = [e for e in events(doc) if e.lane == "provider"]
    attempt = next(e for e in provider if e.label.startswith("attempt 1 record"))
    assert "ref '' from json /order/id: absent (top-level fields: order)" in attempt.label
    assert 'body {"order":{"ref":"k"}}' in attempt.label
    stray = provider[-1]
    assert stray.outcome == "stray"
    assert stray.label == (
        "stray commit rec_5 (record, ref '') read from json /order/id: absent "
        "(top-level fields: order)"
    )


def test_an_unfinished_phase_and_a_live_execution_have_no_end() -> None:
    found = events(evidence_doc())
    settle = next(e for e in found if e.label == "settle")
    execution = next(e for e in found if e.lane == "n8n")
    assert settle.until is None and settle.outcome == "unfinished"
    assert execution.until is None and execution.outcome == "crashed"


def test_journal_labels_are_one_short_line() -> None:
    heal = next(e for e in events(evidence_doc()) if "fault.heal" in e.label)
    assert heal.label == "fault.heal worker_kill (ready_s=2.99)"


def test_the_faults_window_pairs_inject_with_heal() -> None:
    doc = evidence_doc()
    assert fault_windows(doc) == [Window("worker_kill", 1.0, 4.0)]
    doc["journal"] = doc["journal"][:1]
    assert fault_windows(doc) == [Window("worker_kill", 1.0, None)]


def test_evidence_cut_short_still_gives_a_timeline() -> None:
    doc = {
        "case": "x",
        "started_at": T0,
        "phases": [{"name": "prepare", "started_at": T0, "ended_at": None}],
    }
    assert [e.label for e in events(doc)] == ["prepare"]


def test_render_gives_one_line_per_event() -> None:
    lines = render(events(evidence_doc()))
    assert len(lines) == len(events(evidence_doc()))
    assert lines[0].startswith("   +0.000 s  phase")
    assert any("d1 #2: HTTP 200  [ok]  (0.50 s" in line for line in lines)


def test_a_sub_workflows_execution_names_its_workflow() -> None:
    doc = evidence_doc()
    doc["executions"].append(
        {
            "id": "8",
            "status": "error",
            "mode": "integrated",
            "started_at": T0 + 0.6,
            "stopped_at": T0 + 1.2,
            "workflow": "Charge customer",
        }
    )
    labels = [e.label for e in events(doc) if e.lane == "n8n"]
    assert labels == ["execution 7 (webhook)", "execution 8 (integrated) of 'Charge customer'"]


def test_the_requests_n8n_made_show_the_lookups_too() -> None:
    requests = [e for e in events(evidence_doc()) if e.lane == "requests"]
    assert [(round(e.at, 3), e.label, e.outcome) for e in requests] == [
        (
            0.5,
            "GET api.pipedrive.com/v1/deals/search?term=Order%201 -> HTTP 200 (by worker0)",
            "forwarded",
        ),
        (0.6, "POST crm.example.org/api/x -> HTTP 502 (by worker0)", "refused"),
    ]
