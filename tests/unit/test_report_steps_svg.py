"""The report's pieces from saved evidence (no stack, no Allure run): the steps a case gets
and its timeline picture."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from harness.report.steps import evidence_steps
from harness.report.timeline_svg import RED, outcome_colour, render_svg

CASES = Path(__file__).parent.parent / "fixtures" / "report" / "cases"
FAILED = CASES / "payment_naive-retry-worker_kill-after_commit" / "evidence.json"
SVG = "{http://www.w3.org/2000/svg}"


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(FAILED.read_text())
    return doc


def _names(steps: list[Any], depth: int = 0) -> list[tuple[int, str]]:
    out = []
    for step in steps:
        out.append((depth, step.name))
        out += _names(step.steps, depth + 1)
    return out


def test_steps_follow_the_phases_with_their_real_times() -> None:
    doc = _doc()
    steps = evidence_steps(doc, reset_from=doc["started_at"] - 0.5)
    top = [s.name for s in steps]
    assert top[:4] == ["reset", "prepare", "deliver", "await answer"]
    assert top[-1] == "collect"
    deliver = next(s for s in steps if s.name == "deliver")
    phase = next(p for p in doc["phases"] if p["name"] == "deliver")
    assert (deliver.start, deliver.stop) == (
        round(phase["started_at"] * 1000),
        round(phase["ended_at"] * 1000),
    )
    assert [s.name for s in deliver.steps if s.name == "strike"] == ["strike"]  # nested
    starts = [s.start for s in steps]
    assert starts == sorted(starts)


def test_what_happened_sits_in_the_phase_it_happened_in() -> None:
    doc = _doc()
    flat = _names(evidence_steps(doc))
    names = [n for _, n in flat]
    for wanted in ("crash point reached", "fault injected", "healed", "settled"):
        assert any(n.startswith(wanted + ":") for n in names), wanted
    strike_depth = next(d for d, n in flat if n == "strike")
    fault = next(d for d, n in flat if n.startswith("fault injected"))
    assert fault == strike_depth + 1  # injected during the strike
    healed_at = names.index(next(n for n in names if n.startswith("healed")))
    assert names[healed_at - 1] == "heal"


def test_the_judged_step_fails_on_a_verdict_not_expected() -> None:
    doc = _doc()
    judged = [s for s in _walk(evidence_steps(doc)) if s.name.startswith("judged")]
    assert [(s.name, s.status) for s in judged] == [("judged: DUPLICATE (expected PASS)", "failed")]
    doc["expected"] = ["DUPLICATE", "LOST"]
    judged = [s for s in _walk(evidence_steps(doc)) if s.name.startswith("judged")]
    assert [(s.name, s.status) for s in judged] == [("judged: DUPLICATE (as expected)", "passed")]


def _walk(steps: list[Any]) -> list[Any]:
    return [x for s in steps for x in (s, *_walk(s.steps))]


def test_a_case_cut_short_still_gets_its_phases() -> None:
    doc = _doc()
    for key in ("verdict", "explanation", "ended_at", "executions", "provider_attempts"):
        doc.pop(key)
    doc["phases"][-1]["ended_at"] = None
    steps = evidence_steps(doc)
    assert steps[-1].status == "broken"
    assert not any(s.name.startswith("judged") for s in _walk(steps))
    ET.fromstring(render_svg(doc))  # the picture still draws


def test_the_timeline_is_valid_svg_with_every_lane_and_the_fault_window() -> None:
    doc = _doc()
    root = ET.fromstring(render_svg(doc))
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    for lane in ("phases", "sender", "fault", "provider", "n8n runs", "harness"):
        assert lane in texts
    assert any("DUPLICATE" in "".join(t.itertext()) for t in root.iter(f"{SVG}text"))
    windows = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "fault-window"]
    assert len(windows) == 1
    commits = [g for g in root.iter(f"{SVG}g") if "commit ch_" in (g.findtext(f"{SVG}title") or "")]
    assert len(commits) == 2  # the duplicate shows as two commits
    assert float(root.get("width") or 0) == 1100


def test_outcome_colours() -> None:
    assert outcome_colour("declined_402") == RED
    assert outcome_colour("error") == RED
    assert outcome_colour("whatever new") != RED
