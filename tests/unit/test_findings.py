"""The findings machinery without a stack: the probe registry, the closed vocabulary, the
report writer, the diff of two saved reports (and of two runs' verdicts), and how an npm
failure names the missing package."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from harness.engine.registry import PLUGIN_PACKAGES
from harness.errors import ConfigError, HarnessBug, InstallError
from harness.findings.base import (
    PROBES,
    UNDETERMINED,
    Answer,
    ProbeBase,
    checked,
    get_probe,
    known_probes,
    register,
    vocabulary,
)
from harness.findings.diff import diff_runs, probe_diffs, render
from harness.findings.report import Findings, VersionRun, load, markdown, merged, write
from harness.findings.session import install_failure, missing_package, run_findings, stack_plans


class _Probe(ProbeBase):
    question = "Does it?"
    answers = ("yes", "no")

    def workflow(self) -> dict[str, Any]:
        return {"name": "w", "nodes": [], "connections": {}}

    def run(self, stack: Any) -> Answer:
        del stack
        return self.judge({})

    def judge(self, evidence: dict[str, Any]) -> Answer:
        del evidence
        return Answer("yes", "because")


def test_probes_are_found_in_their_package_by_name() -> None:
    assert "harness.findings.probes" in PLUGIN_PACKAGES
    names = known_probes()
    for name in ("recovery_after_commit", "false_stall", "concurrent_operator_retry"):
        assert name in names
        probe = get_probe(name)
        assert probe.name == name
        assert probe.question and probe.answers
        assert probe.workflow()["nodes"], "a probe shows the workflow it deploys"


def test_an_unknown_probe_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="false_stall"):
        get_probe("no_such_probe")


def test_a_probe_registered_elsewhere_is_found() -> None:
    register("test_probe_unit")(_Probe)
    try:
        assert get_probe("test_probe_unit").name == "test_probe_unit"
    finally:
        PROBES.unregister("test_probe_unit")
    assert "test_probe_unit" not in known_probes()


def test_vocabulary_is_every_combination() -> None:
    words = vocabulary("{a}; {b}", a=("x", "y"), b=("1", "2"))
    assert words == ("x; 1", "x; 2", "y; 1", "y; 2")


def test_an_answer_outside_the_vocabulary_is_a_harness_bug() -> None:
    probe = _Probe()
    probe.name = "p"
    assert checked(probe, Answer("no", "w")).answer == "no"
    assert checked(probe, Answer(UNDETERMINED, "window missed")).answer == UNDETERMINED
    with pytest.raises(HarnessBug, match="not in its vocabulary"):
        checked(probe, Answer("probably", "a guess"))


def _findings(answers: dict[str, str], version: str = "2.40.7") -> Findings:
    findings = Findings(versions={version: VersionRun(True, None, "/runs/x")})
    for name, said in answers.items():
        probe = _Probe()
        probe.name = name
        findings.add(
            probe,
            version,
            Answer(
                said,
                f"why {said}",
                facts={"commits": 1},
                evidence={
                    "provider_commits": [{"effect_id": "ch_1"}],
                    "log_lines": {"main": ["job stalled more than maxStalledCount"]},
                    "timeline": [{"t": 0.5, "event": "SIGKILL", "process": "worker0"}],
                },
            ),
        )
    return findings


def test_the_report_round_trips_and_shows_question_answer_evidence_workflow(
    tmp_path: Path,
) -> None:
    findings = _findings({"alpha": "yes", "beta": UNDETERMINED})
    findings.versions["9.9.9"] = VersionRun(False, "npm cannot resolve n8n@9.9.9")
    json_path, md_path = write(findings, tmp_path)
    again = load(tmp_path)
    assert again.answer("alpha", "2.40.7") == "yes"
    assert again.answer("beta", "2.40.7") == UNDETERMINED
    assert not again.versions["9.9.9"].ran
    assert json.loads(json_path.read_text())["format"] == 1
    text = md_path.read_text()
    assert "**Question.** Does it?" in text
    assert "### n8n 2.40.7: yes" in text
    assert "npm cannot resolve n8n@9.9.9" in text
    assert "job stalled more than maxStalledCount" in text
    assert "SIGKILL" in text and '"nodes": []' in text
    assert markdown(again) == text


def test_load_refuses_what_is_not_a_report(tmp_path: Path) -> None:
    (tmp_path / "findings.json").write_text('{"format": 99}')
    with pytest.raises(ConfigError, match="not a findings report"):
        load(tmp_path)


def test_diff_lists_only_the_probes_whose_answer_differs(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write(_findings({"alpha": "yes", "beta": "no"}, "2.33.7"), a)
    write(_findings({"alpha": "yes", "beta": "yes"}, "2.40.7"), b)
    result = diff_runs(a, b)
    assert [(d.probe, d.a.answer, d.b.answer) for d in result.probes] == [("beta", "no", "yes")]
    lines = render(result)
    assert lines[0] == "probe beta: n8n 2.33.7 -> 2.40.7"
    assert "why no" in lines[1] and "why yes" in lines[2]


def test_diff_pairs_common_versions_and_shows_a_probe_run_on_one_side() -> None:
    a = _findings({"alpha": "yes"})
    b = _findings({"alpha": "yes", "gamma": "no"})
    diffs = probe_diffs(a, b)
    assert [(d.probe, d.a.answer, d.b.answer) for d in diffs] == [("gamma", None, "no")]


def test_diff_refuses_reports_it_cannot_pair(tmp_path: Path) -> None:
    a = _findings({"alpha": "yes"}, "2.33.7")
    a.versions["2.34.0"] = VersionRun(True)
    b = _findings({"alpha": "yes"}, "2.40.7")
    with pytest.raises(ConfigError, match="share no n8n version"):
        probe_diffs(a, b)


def _verdicts(path: Path, verdicts: dict[str, str | None]) -> None:
    path.mkdir(parents=True)
    cases = [
        {
            "case_id": case,
            "workflow": case.split("-")[0],
            "scenario": "s",
            "verdict": verdict,
            "expected": ["PASS"],
            "explanation": f"explained {verdict}",
            "seconds": 1.0,
            "evidence": None,
            "error": None if verdict else "setup failed",
        }
        for case, verdict in verdicts.items()
    ]
    doc = {"format": 1, "exit_code": 0, "harness_failed": False, "run_dir": str(path)}
    (path / "verdicts.json").write_text(json.dumps({**doc, "counts": {}, "cases": cases}))


def test_diff_of_two_matrix_runs_lists_changed_verdicts(tmp_path: Path) -> None:
    _verdicts(tmp_path / "a", {"w-one": "PASS", "w-two": "PASS", "w-three": "PASS"})
    _verdicts(tmp_path / "b", {"w-one": "PASS", "w-two": "DUPLICATE", "w-three": None})
    result = diff_runs(tmp_path / "a", tmp_path / "b")
    assert [(c.case_id, c.a, c.b) for c in result.cases] == [
        ("w-three", "PASS", None),
        ("w-two", "PASS", "DUPLICATE"),
    ]
    assert "case w-two: PASS -> DUPLICATE" in render(result)


def test_diff_of_folders_with_nothing_to_compare_says_so(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(ConfigError, match="nothing to compare"):
        diff_runs(tmp_path / "a", tmp_path / "b")


@pytest.mark.parametrize(
    ("npm_output", "missing"),
    [
        ("npm error notarget No matching version found for n8n@9.99.1.", "n8n@9.99.1"),
        ("npm error 404 '@n8n/config@7.0.0' is not in this registry.", "@n8n/config@7.0.0"),
        ("npm ERR! something else entirely", None),
    ],
)
def test_an_npm_failure_names_the_missing_package(npm_output: str, missing: str | None) -> None:
    assert missing_package(npm_output) == missing


def test_an_install_failure_says_which_version_is_missing() -> None:
    exc = InstallError(
        "installing n8n failed (exit 1)\n"
        "npm error notarget No matching version found for n8n@9.99.1."
    )
    assert install_failure("9.99.1", exc) == (
        "npm cannot resolve n8n@9.99.1 (needed by n8n 9.99.1); skipped"
    )
    other = InstallError("installing n8n failed (exit 1): disk full")
    assert install_failure("2.40.7", other).startswith("n8n 2.40.7 could not be installed")


def test_merge_adds_a_new_probe_and_replaces_a_rerun_one(tmp_path: Path) -> None:
    base = _findings({"alpha": "yes", "beta": "no"})
    new = _findings({"beta": "yes", "gamma": "no"})
    new.versions["2.40.7"] = VersionRun(True, None, "/runs/y")
    new.versions["9.9.9"] = VersionRun(False, "npm cannot resolve n8n@9.9.9")
    result = merged(base, new)
    assert result.answer("alpha", "2.40.7") == "yes"
    assert result.answer("beta", "2.40.7") == "yes"
    assert result.answer("gamma", "2.40.7") == "no"
    assert result.versions["2.40.7"].run_dir == "/runs/x + /runs/y"
    assert not result.versions["9.9.9"].ran
    assert base.answer("beta", "2.40.7") == "no", "the base report is not changed"
    failed = Findings(versions={"2.40.7": VersionRun(False, "stack did not come up")})
    assert merged(base, failed).versions["2.40.7"].ran
    write(result, tmp_path)
    assert load(tmp_path).answer("gamma", "2.40.7") == "no"


class _WebhookProbe(_Probe):
    needs_webhook_processor = True


class _FakeStack:
    """What run_findings needs of a stack: where it ran, revive, stop; its config kept."""

    started: ClassVar[list[Any]] = []
    refuse_webhook_processor: ClassVar[bool] = False

    def __init__(self, config: Any) -> None:
        self.config = config
        self.run = type("Run", (), {"run_dir": Path(f"/runs/{len(self.started)}")})()
        self.stopped = False

    @classmethod
    def start(cls, installation: Any, config: Any, progress: Any) -> _FakeStack:
        del installation, progress
        if config.webhook_processor and cls.refuse_webhook_processor:
            raise ConfigError("no webhook processor today")
        cls.started.append(stack := cls(config))
        return stack

    def revive(self) -> list[str]:
        return []

    def stop(self, keep_data: bool = False) -> None:
        del keep_data
        self.stopped = True


@pytest.fixture
def fake_stacks(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_FakeStack]]:
    from harness.findings import session

    class _Installer:
        def __init__(self, **kwargs: Any) -> None:
            del kwargs

        def install(self) -> object:
            return object()

    monkeypatch.setattr(session, "Installer", _Installer)
    monkeypatch.setattr(session, "Stack", _FakeStack)
    monkeypatch.setattr(_FakeStack, "started", [])
    monkeypatch.setattr(_FakeStack, "refuse_webhook_processor", False)
    register("test_plain_probe")(_Probe)
    register("test_webhook_probe")(_WebhookProbe)
    yield _FakeStack
    PROBES.unregister("test_plain_probe")
    PROBES.unregister("test_webhook_probe")


def test_probes_that_need_the_webhook_processor_get_a_second_stack() -> None:
    plain, webhook = _Probe(), _WebhookProbe()
    assert stack_plans([webhook, plain]) == [(False, [plain]), (True, [webhook])]
    assert stack_plans([plain]) == [(False, [plain])]
    assert stack_plans([webhook]) == [(True, [webhook])]
    assert get_probe("webhook_processor_kill").needs_webhook_processor
    assert get_probe("webhook_redis_cut").needs_webhook_processor
    assert not get_probe("recovery_after_commit").needs_webhook_processor


def test_run_findings_starts_the_webhook_stack_only_for_its_probes(
    fake_stacks: type[_FakeStack],
) -> None:
    result = run_findings(["2.40.7"], ["test_plain_probe"], None, lambda m: None)
    assert [s.config.webhook_processor for s in fake_stacks.started] == [False]
    both = run_findings(
        ["2.40.7"], ["test_webhook_probe", "test_plain_probe"], None, lambda m: None
    )
    flags = [s.config.webhook_processor for s in fake_stacks.started[1:]]
    assert flags == [False, True]
    assert all(s.stopped for s in fake_stacks.started)
    assert result.answer("test_plain_probe", "2.40.7") == "yes"
    assert both.answer("test_webhook_probe", "2.40.7") == "yes"
    assert both.versions["2.40.7"].run_dir == "/runs/1 + /runs/2"


def test_a_webhook_stack_that_does_not_come_up_leaves_its_probes_undetermined(
    fake_stacks: type[_FakeStack],
) -> None:
    fake_stacks.refuse_webhook_processor = True
    result = run_findings(
        ["2.40.7"], ["test_plain_probe", "test_webhook_probe"], None, lambda m: None
    )
    assert result.versions["2.40.7"].ran
    assert result.answer("test_plain_probe", "2.40.7") == "yes"
    assert result.answer("test_webhook_probe", "2.40.7") == UNDETERMINED
    why = result.probes["test_webhook_probe"]["results"]["2.40.7"]["why"]
    assert "stack with a webhook processor did not come up" in why
    alone = run_findings(["2.40.7"], ["test_webhook_probe"], None, lambda m: None)
    assert not alone.versions["2.40.7"].ran
    assert "no webhook processor today" in (alone.versions["2.40.7"].error or "")
