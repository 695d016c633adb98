"""The pytest side of the terminal (registered by ``harness.front.plugin``): a line per case as it
ends, the live line while cases run, the verdict grid at the end, and ``verdicts.json``.

It only acts on the crash matrix's cases (tests parametrized with ``chaos_case``); other
tests keep pytest's usual output. Each case carries its identity from collection
(``n8n_chaos_case``) and its verdict from the suite (``n8n_chaos_verdict``) as user
properties of its test report, so under pytest-xdist the controller reads them from the
reports its workers send.

PYTEST_DONT_REWRITE: it holds no assert; ``harness.front.plugin`` imports it before pytest
loads it as a plugin, which pytest would warn about on every run.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO, Any

import pytest
from rich.console import Console, RenderableType

from harness.terminal.grid import build_grid
from harness.terminal.live import LiveLine, PhaseFromEvidence, tty_console
from harness.terminal.outcome import CaseOutcome
from harness.terminal.summary import SUMMARY_FILE, SUMMARY_FLAG, summary_doc, write_summary
from harness.terminal.view import case_line, grid_view, totals

CASE_PROPERTY = "n8n_chaos_case"
VERDICT_PROPERTY = "n8n_chaos_verdict"
MODES = ("auto", "live", "plain", "off")
TERMINAL_FLAG = "--chaos-terminal"  # declared and read back here, by this one name
_TERMINAL = pytest.StashKey["ChaosTerminal"]()
_CHAOS_TEST = "::test_exactly_once["  # how the controller of xdist workers tells a case

# Set by the plugin: the xdist invocation's directory, and the session stack's run directory.
INVOCATION = pytest.StashKey[Path]()
RUN_DIR = pytest.StashKey[Path]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("n8n-chaos")
    group.addoption(
        TERMINAL_FLAG,
        choices=MODES,
        default="auto",
        help="how cases show: a line each and a live line on a terminal (auto), the live "
        "line always (live), lines only (plain), pytest's own dots (off)",
    )
    group.addoption(
        SUMMARY_FLAG,
        default=None,
        metavar="FILE",
        help=f"also write the verdict summary here (always written as {SUMMARY_FILE} into "
        "the run directory)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every case its identity in its reports (they reach the xdist controller)."""
    from harness.matrix.cases import Case

    for item in items:
        case = getattr(getattr(item, "callspec", None), "params", {}).get("chaos_case")
        if isinstance(case, Case):
            item.user_properties.append(
                (
                    CASE_PROPERTY,
                    {
                        "case_id": case.id,
                        "workflow": case.workflow,
                        "scenario": case.scenario.id,
                        "expected": sorted(v.value for v in case.expected),
                    },
                )
            )
            terminal = item.config.stash.get(_TERMINAL, None)
            if terminal is not None:
                terminal.chaos_nodeids.add(item.nodeid)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # an xdist worker: its controller shows the cases
    mode = config.getoption(TERMINAL_FLAG, default="auto")
    terminal = ChaosTerminal(config, mode)
    config.stash[_TERMINAL] = terminal
    config.pluginmanager.register(terminal, "n8n-chaos-terminal")


def pytest_unconfigure(config: pytest.Config) -> None:
    terminal = config.stash.get(_TERMINAL, None)
    if terminal is not None:
        terminal.close()


@pytest.fixture(autouse=True)
def _n8n_chaos_terminal_watch(request: pytest.FixtureRequest) -> None:
    """Hand the live line to the runner as a phase observer (cases run in this process)."""
    terminal = request.config.stash.get(_TERMINAL, None)
    if terminal is None or terminal.live is None or "chaos_case" not in request.fixturenames:
        return
    observers = request.getfixturevalue("chaos_phase_observers")
    if terminal.live not in observers:
        observers.append(terminal.live)


def _reason(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None) or str(report.longrepr or "").strip()
    lines = message.splitlines()
    return lines[0] if lines else "failed"


def outcome_of(report: pytest.TestReport) -> CaseOutcome | None:
    """The case's outcome from a report that ends it (its call, or a failed setup)."""
    props = dict(report.user_properties)
    meta = props.get(CASE_PROPERTY)
    if not isinstance(meta, dict) or report.skipped:
        return None
    if report.when != "call" and not (report.when == "setup" and report.failed):
        return None  # a case ends with its call, or with a setup that failed
    verdict = props.get(VERDICT_PROPERTY) if report.when == "call" else None
    found: dict[str, Any] = verdict if isinstance(verdict, dict) else {}
    error = None
    if not found and report.failed:
        error = f"{report.when}: {_reason(report)}"
    return CaseOutcome.from_json(
        {key: meta[key] for key in ("case_id", "workflow", "scenario")}
        | {key: found.get(key) for key in ("verdict", "explanation", "evidence")}
        | {"expected": meta.get("expected"), "seconds": report.duration}
        | {"error": error if found.get("verdict") is None else None}
    )


class ChaosTerminal:
    def __init__(self, config: pytest.Config, mode: str) -> None:
        self.config = config
        self.mode = mode
        self.outcomes: list[CaseOutcome] = []
        self.chaos_nodeids: set[str] = set()
        self.harness_failed = False  # a teardown error, a crash of the session
        self.summary_path: Path | None = None
        self.active = False
        self.live: LiveLine | None = None
        self._stream: IO[str] | None = None
        self._reporter: Any = None

    # -- when to take over -----------------------------------------------------------
    def _is_case(self, nodeid: str) -> bool:
        return nodeid in self.chaos_nodeids or _CHAOS_TEST in nodeid

    def _activate(self, total: int | None) -> None:
        if self.active or self.mode == "off":
            return
        self.active = True
        self._reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        tty = bool(self._reporter is not None and self._reporter.isatty())
        if self._reporter is not None:
            # Our lines replace pytest's dots, file names and percentages for the cases.
            self._reporter.showfspath = False
            if hasattr(self._reporter, "_show_progress_info"):
                self._reporter._show_progress_info = False
            self._reporter.ensure_newline()
            self._reporter.flush()
        console = None
        if self.mode == "live" or (self.mode == "auto" and tty):
            console, self._stream = tty_console(1)
        invocation = invocation_dir(self.config)
        lookup = PhaseFromEvidence(invocation) if invocation is not None else None
        self.live = LiveLine(console, lookup)
        self.live.total = total

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.chaos_nodeids:
            self._activate(len(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        del node
        if any(_CHAOS_TEST in i for i in ids):
            self._activate(len(ids))

    # -- as cases run ----------------------------------------------------------------
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        del location
        if self.live is not None and self._is_case(nodeid):
            self.live.start(nodeid, nodeid.partition("[")[2].rstrip("]") or nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if (
            report.when == "teardown"
            and report.failed
            and CASE_PROPERTY in dict(report.user_properties)
        ):
            self.harness_failed = True
            self._show_text(f"teardown error after {report.nodeid}: {_reason(report)}")
            return
        outcome = outcome_of(report)
        if outcome is None:
            return
        self.outcomes.append(outcome)
        if self.active:
            self._show(case_line(outcome))

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        del location
        if self.live is not None:
            self.live.end(nodeid)

    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, str] | None:
        """Silence pytest's letter for a case: its line says more (the word stays for the
        short summary at the end)."""
        del config
        if not self.active or hasattr(report, "wasxfail"):
            return None
        # Collection reports carry no user properties: only a case's test report is ours.
        if CASE_PROPERTY not in dict(getattr(report, "user_properties", ())):
            return None
        if report.when == "call":
            return report.outcome, "", report.outcome.upper()
        return ("error", "", "ERROR") if report.failed else None

    # -- the end ---------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        del session
        if self.live is not None:
            self.live.stop()
        if exitstatus in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.INTERRUPTED):
            self.harness_failed = True
        chosen = self.config.getoption(SUMMARY_FLAG, default=None)
        if not self.outcomes and chosen is None:
            return
        run_dir = session_run_dir(self.config)
        doc = summary_doc(self.outcomes, run_dir, self.harness_failed or not self.outcomes)
        paths = [Path(chosen)] if chosen else []
        if run_dir is not None and run_dir.is_dir():
            paths.insert(0, run_dir / SUMMARY_FILE)
        for path in paths:
            write_summary(path, doc)
        self.summary_path = paths[0] if paths else None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.active or not self.outcomes:
            return
        from harness.matrix.cases import scenarios

        grid = build_grid(self.outcomes, [s.id for s in scenarios()])
        terminalreporter.write_sep("=", "n8n-chaos verdicts")
        terminalreporter.write(self._ansi(grid_view(grid)))
        terminalreporter.write(self._ansi(totals(grid)))
        run_dir = session_run_dir(self.config)
        if run_dir is not None and run_dir.is_dir():
            terminalreporter.write_line(f"evidence: {run_dir}/cases/<case id>/evidence.json")
        if self.summary_path is not None:
            terminalreporter.write_line(f"verdicts: {self.summary_path}")
        terminalreporter.write_line("one case: n8n-chaos show <case id>")
        own = self.config.getoption("--chaos-workflows", default=None)
        again = f" --workflows {own}" if own else ""
        terminalreporter.write_line(f"run one again: n8n-chaos run{again} -k <case id>")

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    # -- output ----------------------------------------------------------------------
    def _show(self, line: RenderableType) -> None:
        if self.live is not None and self.live.console is not None:
            self.live.print(line)
        elif self._reporter is not None:
            self._reporter.ensure_newline()
            self._reporter.write(self._ansi(line, wrap=False))

    def _show_text(self, text: str) -> None:
        from rich.text import Text

        self._show(Text(text, style="bold yellow"))

    def _ansi(self, renderable: RenderableType, wrap: bool = True) -> str:
        """Rendered for pytest's own writer: coloured on a terminal, plain in a pipe."""
        tty = bool(self._reporter is not None and self._reporter.isatty())
        width = self._reporter._tw.fullwidth if tty and self._reporter is not None else 10_000
        out = io.StringIO()
        console = Console(
            file=out,
            force_terminal=tty,
            no_color=not tty,
            width=width,
            highlight=False,
            soft_wrap=not wrap or not tty,
        )
        console.print(renderable, overflow="ellipsis" if tty else "fold", crop=tty)
        return out.getvalue()


def invocation_dir(config: pytest.Config) -> Path | None:
    """Under xdist, the controller's directory of the whole invocation (else None)."""
    return config.stash.get(INVOCATION, None)


def session_run_dir(config: pytest.Config) -> Path | None:
    """Where this session's shared files go: the invocation's directory under xdist, else
    the session stack's run directory (None before a stack ran)."""
    return config.stash.get(INVOCATION, None) or config.stash.get(RUN_DIR, None)
