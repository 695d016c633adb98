"""The figures of README.md and docs/*.md, taken from the code and from bench/results/*.json,
never typed.

A figure in one of those pages (``PAGES``) sits between markers, inline or as a block of lines:

    a held answer is released after at most <!-- figure: held_answer_max_s -->9<!-- /figure --> s

    python3 scripts/readme_figures.py           # rewrite every figure in every page
    python3 scripts/readme_figures.py --check   # exit 1 and name each stale or unknown figure

A new figure is one entry in ``FIGURES`` (name -> function returning its text) and its marker
in a page; tests/unit/test_readme.py runs the check. A figure's relative Markdown links are
written from the repository's root and rewritten for the page they land in (``../`` in docs/).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The pages whose figures are filled, as globs under ROOT: the README and every docs page.
PAGES = ("README.md", "docs/*.md")
RESULTS = ROOT / "bench" / "results"
COMMAND = "python3 scripts/readme_figures.py"

# This checkout's harness, also when another one is installed.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARKER = re.compile(
    r"<!-- figure: (?P<name>[a-z0-9_]+) -->(?P<body>.*?)<!-- /figure -->", re.DOTALL
)


def _number(value: float) -> str:
    """2 -> "2", 1.5 -> "1.5", 0.642 -> "0.64": as a person would write it."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _seconds_range(values: list[float]) -> str:
    low, high = round(min(values)), round(max(values))
    return str(low) if low == high else f"{low}-{high}"


def _result(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS / f"{name}.json").read_text())
    return doc


# --- from the code -----------------------------------------------------------------------


def python_min() -> str:
    import tomllib

    spec: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    return spec.replace(">=", ">= ")


def n8n_version() -> str:
    from harness.stack.install import DEFAULT_N8N_VERSION

    return DEFAULT_N8N_VERSION


def n8n_other_versions() -> str:
    from harness.stack.install import DEFAULT_N8N_VERSION, SUPPORTED_N8N_VERSIONS

    return ", ".join(v for v in SUPPORTED_N8N_VERSIONS if v != DEFAULT_N8N_VERSION)


def node_versions() -> str:
    from harness.stack.install import _NODE_FOR_N8N_MINOR

    (minor, newest), *older = _NODE_FOR_N8N_MINOR
    below = ", ".join(node for _, node in older)
    return f"{newest} for n8n >= 2.{minor}, {below} below"


def postgres_major() -> str:
    from harness.stack.install import POSTGRES_PACKAGE_VERSION

    return POSTGRES_PACKAGE_VERSION.split(".")[0]


def postgres_version() -> str:
    from harness.stack.install import POSTGRES_PACKAGE_VERSION

    return ".".join(POSTGRES_PACKAGE_VERSION.split("-")[0].split(".")[:2])


def toxiproxy_version() -> str:
    from harness.stack.install import TOXIPROXY_VERSION

    return TOXIPROXY_VERSION


def compose_version() -> str:
    script = (ROOT / "scripts" / "docker-setup.sh").read_text()
    found = re.search(r"^COMPOSE_VERSION=(\S+)$", script, re.MULTILINE)
    if found is None:
        raise LookupError("scripts/docker-setup.sh sets no COMPOSE_VERSION")
    return found.group(1)


def default_workers() -> str:
    from harness.stack.stack import StackConfig

    (workers,) = [f.default for f in dataclasses.fields(StackConfig) if f.name == "workers"]
    return str(workers)


def fast_crash_settings() -> str:
    from harness.stack.n8n import FAST_CRASH_SETTINGS

    return ", ".join(f"`{name}={value}`" for name, value in FAST_CRASH_SETTINGS.items())


def bull_lock_s() -> str:
    from harness.stack.n8n import FAST_CRASH_SETTINGS

    return _number(int(FAST_CRASH_SETTINGS["QUEUE_WORKER_LOCK_DURATION"]) / 1000)


def _fault_duration(name: str) -> str:
    from harness.engine.faults import get_fault

    duration = get_fault(name).duration_s
    if duration is None:
        raise LookupError(f"fault {name} has no duration")
    return _number(duration)


def provider_slow_hang_s() -> str:
    from harness.engine.faults import get_fault
    from harness.engine.faults.provider_fault import ProviderFault

    fault = get_fault("provider_slow")
    assert isinstance(fault, ProviderFault)
    return _number(fault.hang_ms / 1000)


def node_timeout_s() -> str:
    """The HTTP nodes' timeout, the same in every bundled workflow (or this fails)."""
    timeouts = {
        int(found)
        for path in (ROOT / "workflows_under_test").glob("*/*.json")
        for found in re.findall(r'"timeout":\s*(\d+)', path.read_text())
    }
    if len(timeouts) != 1:
        raise LookupError(f"the bundled workflows' node timeouts differ: {sorted(timeouts)}")
    return _number(timeouts.pop() / 1000)


def held_answer_max_s() -> str:
    from harness.engine.crashpoints.after_commit import RELEASE_AFTER_S

    return _number(RELEASE_AFTER_S)


def settle_quiet_s() -> str:
    from harness.engine.settle import QUIET_S

    return _number(QUIET_S)


def concurrent_copies() -> str:
    from harness.engine.deliveries.concurrent import COPIES

    return str(COPIES)


def concurrent_repeat() -> str:
    from harness.engine.deliveries.concurrent import Concurrent

    return str(Concurrent.repeat)


def sender_attempt_timeout_s() -> str:
    from harness.engine.workload import SenderPolicy

    return _number(SenderPolicy().attempt_timeout_s)


def harness_retries_default() -> str:
    import pytest
    from _pytest.config.argparsing import Parser

    from harness.front.plugin import pytest_addoption

    parser = Parser(_ispytest=True)
    pytest_addoption(parser)
    for group in parser._groups:
        for option in group.options:
            if "--chaos-harness-retries" in option.names():
                return str(option.attrs()["default"])
    raise pytest.UsageError("harness.front.plugin declares no --chaos-harness-retries")


def ci_shards() -> str:
    example = (ROOT / "examples" / "github-actions.yml").read_text()
    found = re.search(r'^\s*SHARDS:\s*"(\d+)"', example, re.MULTILINE)
    if found is None:
        raise LookupError("examples/github-actions.yml sets no SHARDS")
    return found.group(1)


def negative_controls() -> str:
    """The bundled negative controls as a table, from their manifests."""
    rows = [
        "| control | its bug | caught by | verdict |",
        "|---|---|---|---|",
    ]
    bundled = ROOT / "workflows_under_test"
    found = [
        (manifest.parent.name, json.loads(manifest.read_text()).get("negative_control"))
        for manifest in bundled.glob("*/manifest.json")
    ]
    for project in bundled.glob("*/n8n-chaos-project.json"):  # a folder of n8n exports
        doc = json.loads(project.read_text())
        found += [(name, entry.get("negative_control")) for name, entry in doc["workflows"].items()]
    for name, control in sorted(found):
        if not control:
            continue
        caught: dict[str, str] = control["caught_by"]
        scenarios = ", ".join(f"`{s}`" for s in caught)
        verdicts = ", ".join(sorted(set(caught.values())))
        rows.append(f"| `{name}` | {control['bug']} | {scenarios} | {verdicts} |")
    return "\n".join(rows)


def personalities() -> str:
    """The record fake's built-in personalities as a table, from their modules."""
    from fake_providers.personalities import PERSONALITIES

    rows = [
        "| personality | host | what is an effect | what is a read | where the key travels |",
        "|---|---|---|---|---|",
    ]
    for name, kind in sorted(PERSONALITIES.items()):
        rows.append(f"| `{name}` | {kind.host} | {kind.effect} | {kind.read} | {kind.key} |")
    return "\n".join(rows)


# --- from bench/results ------------------------------------------------------------------


def what_n8n_does() -> str:
    """The findings of `n8n-chaos findings` (bench/results/findings-*/findings.json) as a
    table: a probe's question, and per version its answer with a link to the evidence."""
    rows = ["| question | n8n | answer | why |", "|---|---|---|---|"]
    for path in sorted((ROOT / "bench" / "results").glob("findings-*/findings.json")):
        doc = json.loads(path.read_text())
        link = path.relative_to(ROOT).with_name("findings.md").as_posix()
        for version, state in sorted(doc["versions"].items()):
            if not state.get("ran"):
                rows.append(f"| (every probe) | {version} | not run | {state.get('error')} |")
        for name, probe in sorted(doc["probes"].items()):
            for version, result in sorted(probe["results"].items()):
                why = str(result.get("why", "")).replace("|", "/")
                # findings-<version>-default-timings: run with `--n8n-timings default`
                suffix = path.parent.name.removeprefix(f"findings-{version}").strip("-")
                shown = f"{version} ({suffix.replace('-', ' ')})" if suffix else version
                rows.append(
                    f"| {probe['question']} | {shown} | [{result['answer']}]({link}#{name}) "
                    f"| {why} |"
                )
    return "\n".join(rows)


def matrix_by_version(results: Path = RESULTS) -> str:
    """The bundled matrix per n8n version (bench/results/matrix-*/, see
    bench/matrix_versions.py): its counts, and each case whose verdict differs from the
    default version's with both verdicts; a version that could not run says why."""
    from bench.matrix_versions import (
        baseline_of,
        both_expected,
        differences,
        matrix_versions,
        only_in_one,
    )
    from harness.stack.install import DEFAULT_N8N_VERSION
    from harness.terminal.outcome import Kind

    versions = matrix_versions(results)
    baseline = baseline_of(versions, DEFAULT_N8N_VERSION)
    rows = [
        "| n8n | cases | as expected | violations | harness errors "
        f"| differs from {baseline.version} ({baseline.version} -> this version) |",
        "|---|---|---|---|---|---|",
    ]
    for v in versions:
        if v.not_run is not None:
            rows.append(f"| {v.version} | not run: {v.not_run} | | | | |")
            continue
        if v is baseline:
            differs = "(baseline)"
        else:
            found = differences(baseline, v)
            differs = "; ".join(
                f"`{d.case_id}`: {d.a or 'no verdict'} -> {d.b or 'no verdict'}"
                + (" (both expected)" if both_expected(baseline, v, d) else "")
                for d in found
            )
            differs = differs or "nothing"
            if only := len(only_in_one(baseline, v)):
                differs += f" ({only} case(s) ran on one version only)"
        counts = " | ".join(
            str(v.count(k)) for k in (Kind.EXPECTED, Kind.VIOLATION, Kind.HARNESS_ERROR)
        )
        rows.append(f"| {v.version} | {v.cases} | {counts} | {differs} |")
    return "\n".join(rows)


def _overheads(mode: str) -> list[float]:
    return [float(run["overhead_s"]) for run in _result("one_case")["modes"][mode]]


def desk_overhead_cold_s() -> str:
    return _number(round(statistics.median(_overheads("cold")), 1))


def desk_overhead_warm_s() -> str:
    return _number(statistics.median(_overheads("warm, runner")))


def _case_totals(fault: str) -> list[float]:
    scenarios: dict[str, Any] = _result("case_cost")["scenarios"]
    return [
        float(cost["median_s"]["total"])
        for name, cost in scenarios.items()
        if name.split("-")[1] == fault
    ]


def case_no_fault_s() -> str:
    return _seconds_range(_case_totals("no_fault"))


def case_worker_kill_s() -> str:
    return _seconds_range(_case_totals("worker_kill"))


def matrix_speedup_2() -> str:
    results = _result("matrix")["results"]
    wall = {tuple(r["args"]): float(r["wall_s"]) for r in results}
    return f"{wall[()] / wall[('-n', '2')]:.2f}x"


def explore_rate() -> str:
    return _number(float(_result("explore")["summary"]["boundaries_per_minute"]))


FIGURES: dict[str, Callable[[], str]] = {
    "python_min": python_min,
    "n8n_version": n8n_version,
    "n8n_other_versions": n8n_other_versions,
    "node_versions": node_versions,
    "postgres_major": postgres_major,
    "postgres_version": postgres_version,
    "toxiproxy_version": toxiproxy_version,
    "compose_version": compose_version,
    "default_workers": default_workers,
    "fast_crash_settings": fast_crash_settings,
    "bull_lock_s": bull_lock_s,
    "redis_blip_s": lambda: _fault_duration("redis_blip"),
    "redis_outage_s": lambda: _fault_duration("redis_outage"),
    "postgres_cut_s": lambda: _fault_duration("postgres_cut"),
    "webhook_redis_cut_s": lambda: _fault_duration("webhook_redis_cut"),
    "provider_slow_hang_s": provider_slow_hang_s,
    "node_timeout_s": node_timeout_s,
    "held_answer_max_s": held_answer_max_s,
    "settle_quiet_s": settle_quiet_s,
    "concurrent_copies": concurrent_copies,
    "concurrent_repeat": concurrent_repeat,
    "sender_attempt_timeout_s": sender_attempt_timeout_s,
    "harness_retries_default": harness_retries_default,
    "ci_shards": ci_shards,
    "negative_controls": negative_controls,
    "personalities": personalities,
    "what_n8n_does": what_n8n_does,
    "matrix_by_version": matrix_by_version,
    "desk_overhead_cold_s": desk_overhead_cold_s,
    "desk_overhead_warm_s": desk_overhead_warm_s,
    "case_no_fault_s": case_no_fault_s,
    "case_worker_kill_s": case_worker_kill_s,
    "matrix_speedup_2": matrix_speedup_2,
    "explore_rate": explore_rate,
}


def _body(value: str) -> str:
    """A figure of several lines stands apart from the markers, so Markdown sees a block."""
    return f"\n\n{value}\n\n" if "\n" in value else value


def _relink(value: str, prefix: str) -> str:
    """A figure's relative Markdown links (written from ROOT) as seen from a page ``prefix``
    (``"../"`` for docs/) away from ROOT; absolute URLs and anchors stay as they are."""
    if not prefix:
        return value
    return re.sub(r"\]\((?![a-z][a-z0-9+.-]*:|#|/)", f"]({prefix}", value)


def _fill(text: str, values: dict[str, str], prefix: str = "") -> tuple[str, list[str]]:
    """The text with every figure filled in (``values`` caches each figure's text across
    pages), and a line per figure that was stale or unknown."""
    problems: list[str] = []

    def fill(found: re.Match[str]) -> str:
        name = found.group("name")
        if name not in FIGURES:
            problems.append(f"unknown figure {name!r} (known: {', '.join(sorted(FIGURES))})")
            return found.group(0)
        if name not in values:
            values[name] = _body(FIGURES[name]())
        value = _relink(values[name], prefix)
        if found.group("body") != value:
            problems.append(
                f"figure {name!r} says {found.group('body').strip()!r}, "
                f"the source says {value.strip()!r}"
            )
        return f"<!-- figure: {name} -->{value}<!-- /figure -->"

    return MARKER.sub(fill, text), problems


def _unused(values: dict[str, str], where: str) -> list[str]:
    return [
        f"figure {name!r} is in FIGURES but {where} never uses it"
        for name in FIGURES
        if name not in values
    ]


def render(text: str, prefix: str = "") -> tuple[str, list[str]]:
    """One page's text with every figure filled in, and a line per figure that was stale or
    unknown, or that the text never uses."""
    values: dict[str, str] = {}
    filled, problems = _fill(text, values, prefix)
    return filled, problems + _unused(values, "this text")


def pages(root: Path = ROOT) -> list[str]:
    """The pages (paths under ``root``, as ``README.md`` and ``docs/x.md``) in ``PAGES``."""
    found: list[str] = []
    for pattern in PAGES:
        found += sorted(path.relative_to(root).as_posix() for path in root.glob(pattern))
    return found


def read_pages(root: Path = ROOT) -> dict[str, str]:
    return {page: (root / page).read_text() for page in pages(root)}


def render_pages(texts: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Every page (path under ROOT -> text) with its figures filled in, and a line per figure
    that was stale or unknown (``page: problem``), or that no page uses."""
    values: dict[str, str] = {}
    filled: dict[str, str] = {}
    problems: list[str] = []
    for page, text in texts.items():
        filled[page], found = _fill(text, values, "../" * page.count("/"))
        problems += [f"{page}: {problem}" for problem in found]
    return filled, problems + _unused(values, " and ".join(PAGES))


def by_hand(problem: str) -> bool:
    """A problem the generator cannot fix: an unknown marker or an unused figure."""
    return bool(re.match(r"(\S+: )?unknown figure ", problem)) or problem.endswith("never uses it")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    texts = read_pages()
    filled, problems = render_pages(texts)
    manual = [p for p in problems if by_hand(p)]
    shown = problems if args.check else manual
    for problem in shown:
        print(problem, file=sys.stderr)
    if manual:
        print(f"fix by hand: the marker in the page or FIGURES in {__file__}", file=sys.stderr)
    if args.check:
        if len(problems) > len(manual):
            print(f"regenerate with: {COMMAND}", file=sys.stderr)
        return 1 if problems else 0
    for page, text in texts.items():
        if filled[page] != text:
            (ROOT / page).write_text(filled[page])
            rewritten = sum(p.startswith(f"{page}: ") and not by_hand(p) for p in problems)
            print(f"{page}: {rewritten} figure(s) rewritten")
    return 1 if manual else 0


if __name__ == "__main__":
    sys.exit(main())
