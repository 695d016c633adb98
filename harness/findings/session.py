"""Run probes on one or more n8n versions: per version, install it (the cache's installer),
bring a stack up, run each probe, tear the stack down. A version npm cannot resolve is
recorded (which package and version is missing) and the others go on."""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.errors import HarnessError, InstallError
from harness.findings.base import Answer, Probe, get_probe, undetermined
from harness.findings.report import Findings, VersionRun
from harness.stack.install import Installer
from harness.stack.stack import Stack, StackConfig

Say = Callable[[str], None]

# Keep Bull's finished jobs in Redis for the evidence (n8n's default removes them at once);
# nothing else of n8n's behaviour depends on it.
FINDINGS_N8N_ENV = {
    "N8N_EXECUTIONS_QUEUE_KEEP_LAST_COMPLETED": "100",
    "N8N_EXECUTIONS_QUEUE_KEEP_LAST_FAILED": "100",
}

_NPM_MISSING = (
    re.compile(r"No matching version found for (\S+?)\.?$", re.MULTILINE),
    re.compile(r"'(\S+@\S+)' is not in (?:this|the npm) registry"),
    re.compile(r"404 Not Found - GET \S+/(@?[^/\s]+(?:%2[fF][^/\s]+)?)\b"),
)


def missing_package(message: str) -> str | None:
    """The package (and version) npm could not resolve, from its output; None otherwise."""
    for pattern in _NPM_MISSING:
        if match := pattern.search(message):
            return match.group(1).replace("%2f", "/").replace("%2F", "/")
    return None


def install_failure(version: str, exc: InstallError) -> str:
    missing = missing_package(str(exc))
    if missing is not None:
        return f"npm cannot resolve {missing} (needed by n8n {version}); skipped"
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"n8n {version} could not be installed: {first}"


def run_probe(probe: Probe, stack: Stack) -> Answer:
    """One probe; a harness failure becomes UNDETERMINED with the error (never a guess)."""
    started = time.monotonic()
    try:
        answer = probe.run(stack)
    except HarnessError as exc:
        answer = undetermined(f"harness error: {type(exc).__name__}: {exc}"[:500])
    except Exception as exc:  # a probe bug must not cost the other probes their answers
        answer = undetermined(
            f"probe failed: {type(exc).__name__}: {exc}"[:500],
            {"traceback": traceback.format_exc()[-3000:]},
        )
    answer.duration_s = time.monotonic() - started
    return answer


def stack_plans(probes: Sequence[Probe]) -> list[tuple[bool, list[Probe]]]:
    """The stacks one version needs, in order, each with its probes: (webhook processor or
    not, probes). The probes that need ``n8n webhook`` get a second stack of their own, only
    if any was selected; the others keep the plain stack (main takes the webhooks there)."""
    plans = [
        (needs, [p for p in probes if bool(p.needs_webhook_processor) == needs])
        for needs in (False, True)
    ]
    return [(needs, selected) for needs, selected in plans if selected]


def run_findings(
    versions: Sequence[str],
    probe_names: Sequence[str],
    runs_root: Path | None,
    say: Say,
    workers: int = 2,
    timings: str = "fast",
) -> Findings:
    probes = [get_probe(name) for name in probe_names]
    findings = Findings()
    for version in versions:
        try:
            installation = Installer(
                n8n_version=version, progress=lambda part, m: say(f"install {part}: {m}")
            ).install()
        except InstallError as exc:
            findings.versions[version] = VersionRun(False, install_failure(version, exc))
            say(findings.versions[version].error or "")
            continue
        except HarnessError as exc:
            findings.versions[version] = VersionRun(False, str(exc).splitlines()[0])
            continue
        run_dirs: list[str] = []
        failed: list[tuple[str, list[Probe]]] = []  # (why, its probes) per stack not up
        for webhook_processor, selected in stack_plans(probes):
            config = StackConfig(
                workers=workers,
                webhook_processor=webhook_processor,
                n8n_version=version,
                n8n_env=FINDINGS_N8N_ENV,
                n8n_timings=timings,
                runs_root=runs_root,
            )
            what = "stack with a webhook processor" if webhook_processor else "stack"
            try:
                stack = Stack.start(installation, config, progress=say)
            except HarnessError as exc:
                failed.append((f"{what} did not come up: {exc}"[:500], selected))
                say(failed[-1][0])
                continue
            run_dirs.append(str(stack.run.run_dir))
            try:
                _run_probes(findings, version, selected, stack, say)
            finally:
                stack.stop()  # the probes have read their evidence; logs stay in the run dir
        if not run_dirs:
            findings.versions[version] = VersionRun(False, "; ".join(w for w, _ in failed))
            continue
        findings.versions[version] = VersionRun(True, None, " + ".join(run_dirs))
        for why, selected in failed:  # the version ran: these probes say why no answer
            for probe in selected:
                findings.add(probe, version, undetermined(why))
    return findings


def _run_probes(
    findings: Findings, version: str, probes: Sequence[Probe], stack: Stack, say: Say
) -> None:
    for probe in probes:
        say(f"n8n {version}: probe {probe.name} ...")
        stack.revive()  # a probe leaves every process running, but make sure
        answer = run_probe(probe, stack)
        findings.add(probe, version, answer)
        say(f"n8n {version}: {probe.name}: {answer.answer} ({answer.duration_s:.0f} s)")
