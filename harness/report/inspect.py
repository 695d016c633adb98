"""Internal: Saved cases, read back: find a case's evidence, show it, re-judge it with today's
oracle.

``n8n-chaos show`` and ``n8n-chaos recheck`` are thin over this; nothing here starts a
process or touches a stack (the oracle is pure, the evidence is plain JSON).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from harness.errors import ConfigError
from harness.judge.oracle import Evidence, judge
from harness.report.timeline import case_start, events, render
from harness.terminal.outcome import CaseOutcome, from_evidence
from harness.terminal.summary import SUMMARY_FILE, read_summary
from harness.terminal.view import counted, outcome_style

EVIDENCE_FILE = "evidence.json"
_CASE_GLOBS = (f"cases/{{}}/{EVIDENCE_FILE}", f"*/cases/{{}}/{EVIDENCE_FILE}")


def find_evidence(target: str, runs_root: Path) -> Path:
    """A case's evidence.json: ``target`` is its path, its folder, or a case id looked up
    under ``runs_root`` (a runs folder or one run's folder; the newest run that has it)."""
    given = Path(target)
    if given.is_file():
        return given
    if (given / EVIDENCE_FILE).is_file():
        return given / EVIDENCE_FILE
    if given.is_dir():
        raise ConfigError(
            f"{given} is a folder without {EVIDENCE_FILE}: give a case's folder, its "
            "evidence.json or its id (`n8n-chaos recheck` takes a whole run)"
        )
    found = {p.resolve() for p in _case_candidates(target, runs_root)}
    if found:
        # Newest file first; on equal times the later run id (they sort by start time).
        return max(found, key=lambda p: (p.stat().st_mtime_ns, str(p)))
    known = sorted({p.parent.name for p in _case_candidates("*", runs_root)})
    near = difflib.get_close_matches(target, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(near)}?" if near else "."
    raise ConfigError(
        f"no case {target!r} under {runs_root}{hint} Give a case id of a run there "
        "(`n8n-chaos list` names them), a path to its evidence.json, or --runs DIR"
    )


_EARLIER_TRY = re.compile(r"\.try\d+$")


def _case_candidates(case_id: str, root: Path) -> Iterable[Path]:
    # <run>/cases/<id>, <runs>/<run>/cases/<id>, <runs>/<invocation>/<gwN>/cases/<id>; not
    # <id>.try<k>, the evidence of a try the harness ran again (the case is the last try).
    for depth in ("", "*/", "*/*/"):
        for pattern in _CASE_GLOBS:
            found = root.glob(depth + pattern.format(case_id))
            yield from (p for p in found if not _EARLIER_TRY.search(p.parent.name))


def load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not readable evidence ({exc})") from exc
    if not isinstance(doc, dict) or "case" not in doc:
        raise ConfigError(f"{path}: not a case's evidence (no 'case' field)")
    return doc


# -- show ------------------------------------------------------------------------------
def show(doc: dict[str, Any], path: Path) -> Group:
    """The verdict, why, the proofs and the timeline of one case."""
    outcome = from_evidence(doc, str(path))
    head = Text()
    head.append(f"{outcome.verdict or 'NO VERDICT'}", style=outcome_style(outcome))
    head.append(f"  {outcome.case_id}", style="bold")
    parts: list[RenderableType] = [
        head,
        Text(
            f"workflow {doc.get('workflow')}  delivery {doc.get('delivery')}  fault "
            f"{doc.get('fault')}  crash point {doc.get('crashpoint')}  key {doc.get('key')}"
        ),
        Text(f"expected {'/'.join(outcome.expected) or '?'}: " + _expected_word(outcome)),
        *_judged_by(doc),
        Text(f"why: {outcome.explanation or outcome.error}"),
        Text(""),
        Text("proofs", style="bold"),
    ]
    proofs = (doc.get("evidence") or {}).get("proofs") or []
    for proof in proofs:
        held = bool(proof.get("held"))
        line = Text("  ")
        line.append("held   " if held else "MISSED ", style="green" if held else "bold red")
        fact = _relative_times(str(proof.get("fact")), case_start(doc))
        line.append(f"{proof.get('role')} {proof.get('name')}: {fact}")
        parts.append(line)
    if not proofs:
        parts.append(Text("  none saved (the case ended before it was judged)", style="yellow"))
    parts += [Text(""), Text("timeline (seconds from the case's start)", style="bold")]
    parts += [Text(line) for line in render(events(doc))]
    parts += [Text(""), Text(f"evidence: {path}"), Text(f"logs: {path.parent / 'logs'}")]
    return Group(*parts)


def _judged_by(doc: dict[str, Any]) -> list[Text]:
    """Which copy of the harness ran the case (evidence from before it was kept: none)."""
    harness = doc.get("harness")
    if not isinstance(harness, dict):
        return []
    commit = f" at {harness['commit']}" if harness.get("commit") else ""
    return [Text(f"run by the harness in {harness.get('path')}{commit}", style="dim")]


_EPOCH = re.compile(r"\b1\d{9}(?:\.\d+)?\b")


def _relative_times(text: str, zero: float) -> str:
    """Wall-clock stamps in a proof's fact, as seconds from the case's start (the
    timeline's clock)."""
    return _EPOCH.sub(lambda m: f"+{float(m.group()) - zero:.3f} s", text)


def _expected_word(outcome: CaseOutcome) -> str:
    return {
        "expected": "as expected",
        "violation": "NOT as expected (a violation)",
        "harness-error": "a harness error (the case proves nothing)",
    }[outcome.kind.value]


# -- recheck ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Rechecked:
    outcome: CaseOutcome  # with the verdict of today's oracle
    saved: str | None  # the verdict saved at the time

    @property
    def changed(self) -> bool:
        return self.outcome.verdict != self.saved


def evidence_files(target: Path) -> list[Path]:
    """One case (its evidence.json or folder) or every case of a run folder (also those a
    verdicts.json lists elsewhere, e.g. on an attached stack)."""
    if target.is_file():
        return [target]
    if (target / EVIDENCE_FILE).is_file():
        return [target / EVIDENCE_FILE]
    if not target.is_dir():
        raise ConfigError(f"{target}: no such file or folder; give a run folder or a case's")
    found = {p.resolve() for p in _case_candidates("*", target)}
    summary = target / SUMMARY_FILE
    if summary.is_file():
        _, listed = read_summary(summary)
        found |= {Path(o.evidence).resolve() for o in listed if o.evidence}
    files = sorted(p for p in found if p.is_file())
    if not files:
        raise ConfigError(f"{target}: no {EVIDENCE_FILE} in it (cases/<case id>/...)")
    return files


def saved_verdicts(target: Path) -> dict[str, str | None]:
    """Case id -> the verdict a run's verdicts.json recorded (empty without one)."""
    summary = target / SUMMARY_FILE
    if not target.is_dir() or not summary.is_file():
        return {}
    _, listed = read_summary(summary)
    return {o.case_id: o.verdict for o in listed}


def recheck(path: Path, saved: dict[str, str | None] | None = None) -> Rechecked:
    """Re-judge one saved case; a case cut short before its evidence was collected stays
    without a verdict (a harness error)."""
    doc = load(path)
    before = from_evidence(doc, str(path))
    old = (saved or {}).get(before.case_id, before.verdict)
    if not doc.get("evidence"):
        return Rechecked(before, old)
    judgement = judge(Evidence.from_json(doc["evidence"]))
    now = CaseOutcome(
        case_id=before.case_id,
        workflow=before.workflow,
        scenario=before.scenario,
        verdict=judgement.verdict.value,
        expected=before.expected,
        explanation=judgement.explanation,
        seconds=before.seconds,
        evidence=str(path),
    )
    return Rechecked(now, old)


def changes_view(rechecked: list[Rechecked]) -> Group:
    changed = [r for r in rechecked if r.changed]
    if not changed:
        return Group(Text(f"no verdict changed ({counted(len(rechecked), 'case')} re-judged)"))
    head = Text(f"{counted(len(changed), 'verdict')} changed:", style="bold")
    lines: list[RenderableType] = [head]
    for r in changed:
        line = Text(f"  {r.outcome.case_id}: {r.saved or 'no verdict'} -> ")
        line.append(str(r.outcome.verdict), style=outcome_style(r.outcome))
        lines.append(line)
    return Group(*lines)
