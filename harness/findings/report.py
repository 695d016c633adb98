"""The findings report: ``findings.json`` (everything, for ``n8n-chaos diff`` and for
tools) and ``findings.md`` (per probe: the question, the answer per version with why, an
evidence summary, and the workflow that shows it).

findings.json::

    {"format": 1, "generated_at": <epoch s>,
     "versions": {"<v>": {"ran": bool, "error": str|null, "run_dir": str|null}},
     "probes": {"<name>": {"question": str, "answers": [...], "workflow": {...},
                           "results": {"<v>": Answer.to_json()}}}}
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.findings.base import Answer, Probe

FINDINGS_JSON = "findings.json"
FINDINGS_MD = "findings.md"
FORMAT = 1
# The facts and the evidence kinds the Markdown summary shows (the JSON has everything).
SUMMARY_EVIDENCE = ("provider_commits", "provider_attempts", "bull_jobs", "log_lines")


@dataclass
class VersionRun:
    ran: bool
    error: str | None = None
    run_dir: str | None = None


@dataclass
class Findings:
    versions: dict[str, VersionRun] = field(default_factory=dict)
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    generated_at: float = field(default_factory=time.time)

    def add(self, probe: Probe, version: str, answer: Answer) -> None:
        entry = self.probes.setdefault(
            probe.name,
            {
                "question": probe.question,
                "answers": list(probe.answers),
                "workflow": probe.workflow(),
                "results": {},
            },
        )
        entry["results"][version] = answer.to_json()

    def answer(self, probe: str, version: str) -> str | None:
        result = self.probes.get(probe, {}).get("results", {}).get(version)
        return None if result is None else str(result["answer"])

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "generated_at": self.generated_at,
            "versions": {v: vars(r) for v, r in self.versions.items()},
            "probes": self.probes,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Findings:
        return cls(
            versions={v: VersionRun(**r) for v, r in doc.get("versions", {}).items()},
            probes=dict(doc.get("probes", {})),
            generated_at=float(doc.get("generated_at", 0.0)),
        )


def merged(base: Findings, new: Findings) -> Findings:
    """``base`` with ``new``'s answers added (a probe's answer on a version ``new`` ran
    replaces the one in ``base``): probes run at another time join a committed report. A
    version both ran lists both run folders."""
    result = Findings.from_json(json.loads(json.dumps(base.to_json(), default=str)))
    result.generated_at = new.generated_at
    for version, run in new.versions.items():
        old = result.versions.get(version)
        if old is not None and old.ran and run.ran and old.run_dir and run.run_dir:
            run = VersionRun(True, None, f"{old.run_dir} + {run.run_dir}")
        elif old is not None and old.ran and not run.ran:
            continue  # a failed re-run does not hide the answers already there
        result.versions[version] = run
    for name, entry in new.probes.items():
        target = result.probes.setdefault(name, {**entry, "results": {}})
        target |= {k: v for k, v in entry.items() if k != "results"}
        target["results"] = {**target["results"], **entry["results"]}
    return result


def load(path: Path) -> Findings:
    """A findings.json, or the one in a findings folder."""
    file = path / FINDINGS_JSON if path.is_dir() else path
    fix = "`n8n-chaos findings --out DIR` writes one"
    try:
        doc = json.loads(file.read_text())
        if doc.get("format") == FORMAT:
            return Findings.from_json(doc)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{file}: not a findings report ({exc}); {fix}") from exc
    raise ConfigError(
        f"{file}: not a findings report (format {doc.get('format')!r}, expected {FORMAT}); {fix}"
    )


def write(findings: Findings, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / FINDINGS_JSON, out / FINDINGS_MD
    tmp = json_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(findings.to_json(), indent=2, default=str) + "\n")
    tmp.replace(json_path)
    md_path.write_text(markdown(findings))
    return json_path, md_path


def markdown(findings: Findings) -> str:
    versions = list(findings.versions)
    lines = ["# What n8n does under faults: findings", ""]
    lines += [
        f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(findings.generated_at))}."
    ]
    lines += ["", "| version | ran | note |", "|---|---|---|"]
    for version, run in findings.versions.items():
        note = _cell(run.error or (run.run_dir or ""))
        lines.append(f"| {version} | {'yes' if run.ran else 'no'} | {note} |")
    lines += ["", "## Answers", "", "| probe | " + " | ".join(versions) + " |"]
    lines.append("|---|" + "---|" * len(versions))
    for name in findings.probes:
        cells = [_cell(findings.answer(name, v) or "—") for v in versions]
        lines.append(f"| [{name}](#{name}) | " + " | ".join(cells) + " |")
    for name, entry in findings.probes.items():
        lines += ["", f"## {name}", "", f"**Question.** {entry['question']}", ""]
        for version in versions:
            result = entry["results"].get(version)
            if result is None:
                continue
            lines += [f"### n8n {version}: {result['answer']}", "", f"{result['why']}", ""]
            lines += _evidence_summary(result)
        workflow = json.dumps(entry["workflow"], indent=2)
        lines += ["<details><summary>The workflow</summary>", "", "```json", workflow, "```"]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _evidence_summary(result: dict[str, Any]) -> list[str]:
    lines = []
    facts = result.get("facts") or {}
    if facts:
        lines += [
            "Facts: "
            + "; ".join(f"`{k}` = {json.dumps(v, default=str)}" for k, v in facts.items()),
            "",
        ]
    evidence = result.get("evidence") or {}
    for kind in SUMMARY_EVIDENCE:
        value = evidence.get(kind)
        if not value:
            continue
        if kind == "log_lines":
            lines.append("Log lines:")
            lines.append("```")
            for process, found in value.items():
                lines += [f"[{process}] {line}" for line in found[-8:]]
            lines.append("```")
        else:
            lines.append(
                f"{kind.replace('_', ' ').capitalize()}: `{json.dumps(value, default=str)[:600]}`"
            )
        lines.append("")
    timeline = evidence.get("timeline") or []
    if timeline:
        lines.append("Timeline (s since the probe began):")
        lines.append("```")
        for event in timeline[:40]:
            detail = {k: v for k, v in event.items() if k not in ("t", "event")}
            lines.append(
                f"{event['t']:8.2f}  {event['event']}  {json.dumps(detail, default=str)[:200]}"
            )
        lines.append("```")
        lines.append("")
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:300]
