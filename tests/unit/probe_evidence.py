"""Evidence for the probes' judgement tests: the evidence each probe recorded in the committed
findings (bench/results/findings-*/findings.json), and small hand-made evidence for the
branches a recorded run did not take."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.findings.base import Answer, checked, get_probe

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


def recorded(probe: str, version: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the evidence, the answer) a probe recorded on ``version``. Reports written before
    probes kept ``evidence["observed"]`` carry the same measurements as facts."""
    doc = json.loads((RESULTS / f"findings-{version}" / "findings.json").read_text())
    result = doc["probes"][probe]["results"][version]
    evidence = dict(result["evidence"])
    evidence.setdefault("observed", dict(result["facts"]))
    return evidence, result


def rejudged(probe: str, version: str) -> tuple[Answer, dict[str, Any]]:
    """(the probe's judgement of its recorded evidence, the answer it recorded then)."""
    evidence, result = recorded(probe, version)
    judged = get_probe(probe)
    return checked(judged, judged.judge(evidence)), result


def reached(*whats: str) -> list[dict[str, Any]]:
    """Timeline events: each wait reached."""
    return [{"t": float(i), "event": "reached", "what": w} for i, w in enumerate(whats)]


def gave_up(what: str) -> dict[str, Any]:
    return {"t": 99.0, "event": "gave up", "what": what, "after_s": 15.0}


def paths(**by_execution: list[str]) -> dict[str, list[dict[str, Any]]]:
    """status_paths from statuses: ``paths(e7=["running", "error"])`` for execution 7."""
    return {
        key.removeprefix("e"): [{"t": float(i), "status": s} for i, s in enumerate(statuses)]
        for key, statuses in by_execution.items()
    }


def commits(n: int) -> list[dict[str, Any]]:
    return [{"effect_id": f"ch_{i}", "attempt_no": i + 1, "committed_at": 0.0} for i in range(n)]


def sender(status: int | None) -> dict[str, Any]:
    return {"url": "http://127.0.0.1:1/webhook/x", "sent_at": 0.1, "status": status}
