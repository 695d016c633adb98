"""`findings` (probes of n8n itself, per version, into a findings report) and `diff` (what
changed between two findings reports, or two matrix runs' verdicts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.markup import escape

from harness.errors import HarnessError
from harness.front.cli.common import console, fail, folder_option
from harness.front.options import click_options
from harness.stack.install import DEFAULT_N8N_VERSION


@click.command()
@click.option(
    "--n8n-version",
    "versions",
    multiple=True,
    metavar="V",
    help=f"An n8n version to probe (repeatable; default {DEFAULT_N8N_VERSION}). A version npm "
    "cannot resolve is reported and skipped.",
)
@click.option(
    "--probe",
    "probe_names",
    multiple=True,
    metavar="NAME",
    help="Only this probe (repeatable; default every registered probe).",
)
@folder_option(
    "--out",
    default=Path("findings"),
    show_default=True,
    help="Where findings.json and findings.md go (the stacks' run folders go under it too).",
)
@click.option(
    "--merge",
    is_flag=True,
    help="Keep the answers of the findings.json already in --out and add (or replace) this "
    "run's: e.g. a new probe joining a committed report.",
)
@click.option("--workers", type=click.IntRange(min=2), default=2, show_default=True)
@folder_option(
    "--alluredir",
    help="Also write each probe's answer per version as an Allure result (suite 'findings') "
    "for `n8n-chaos report --results DIR`.",
)
@click.option("--list", "list_only", is_flag=True, help="List the probes and their questions.")
@click_options("findings")
def findings(
    versions: tuple[str, ...],
    probe_names: tuple[str, ...],
    out: Path,
    merge: bool,
    workers: int,
    alluredir: Path | None,
    list_only: bool,
    n8n_timings: str,
) -> None:
    """Ask n8n itself what it does under faults, per version, with evidence.

    \b
    Examples:
      n8n-chaos findings                                   every probe on the default n8n
      n8n-chaos findings --probe false_stall --out f1      one probe
      n8n-chaos findings --probe NEW --out F --merge       add a probe's answer to F
      n8n-chaos findings --n8n-version 2.33.7 --n8n-version 2.40.7
      n8n-chaos findings --probe redis_silent --n8n-timings default   n8n's own lock/stall values
      n8n-chaos diff findings-2.33.7 findings-2.40.7       what changed
    Exit codes: 0 every probe answered; 2 a probe UNDETERMINED or a version not run.
    """
    from harness.findings.base import get_probe, known_probes
    from harness.findings.report import FINDINGS_JSON, load, merged, write
    from harness.findings.session import run_findings
    from harness.stack.n8n import check_timings

    try:
        check_timings(n8n_timings)
        names = list(probe_names) or known_probes()
        probes = [get_probe(name) for name in names]
        if list_only:
            for probe in probes:
                click.echo(f"{probe.name}: {probe.question}")
            return
        result = run_findings(
            list(versions) or [DEFAULT_N8N_VERSION],
            names,
            (out / "runs").resolve(),
            lambda m: console.print(escape(m)),
            workers=workers,
            timings=n8n_timings,
        )
        if merge and (out / FINDINGS_JSON).exists():
            result = merged(load(out), result)
        json_path, md_path = write(result, out)
        if alluredir is not None:
            from harness.report.findings_allure import write_findings

            alluredir.mkdir(parents=True, exist_ok=True)
            write_findings(alluredir, json.loads(json_path.read_text()))
    except HarnessError as exc:
        fail(exc)
    for name, entry in result.probes.items():
        for version, answer in entry["results"].items():
            click.echo(f"{name} @ {version}: {answer['answer']}")
    console.print(f"findings: {json_path} and {md_path}")
    complete = all(r.ran for r in result.versions.values()) and all(
        a["answer"] != "UNDETERMINED" for e in result.probes.values() for a in e["results"].values()
    )
    sys.exit(0 if complete else 2)


@click.command()
@click.argument("run_a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("run_b", type=click.Path(exists=True, file_okay=False, path_type=Path))
def diff(run_a: Path, run_b: Path) -> None:
    """Print the probes whose answer and the cases whose verdict differ between two runs.

    RUN_A and RUN_B are findings folders (findings.json) or matrix run folders
    (verdicts.json). Exit code 1 when something differs, 0 when nothing does.
    """
    from harness.findings.diff import diff_runs, render

    try:
        result = diff_runs(run_a, run_b)
    except HarnessError as exc:
        fail(exc)
    for line in render(result):
        click.echo(line)
    sys.exit(1 if result.probes or result.cases else 0)
