"""The CI example (examples/github-actions.yml) is valid, does what README says, uses only
n8n-chaos commands and options that exist, and its folder picking works on a real git repo."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest
import yaml  # type: ignore[import-untyped]  # no stubs installed

from harness.front.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "github-actions.yml"
PYTEST_OPTIONS = {"--junitxml"}  # `n8n-chaos run` hands options it does not know to pytest


def workflow() -> dict[Any, Any]:
    doc = yaml.safe_load(EXAMPLE.read_text())
    assert isinstance(doc, dict)
    return doc


def steps(job: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = workflow()["jobs"][job]["steps"]
    return found


def runs(job: str) -> str:
    return "\n".join(str(s.get("run", "")) for s in steps(job))


def uses(job: str, action: str) -> list[dict[str, Any]]:
    return [s for s in steps(job) if str(s.get("uses", "")).startswith(action)]


def test_it_parses_and_triggers_on_changed_workflows() -> None:
    doc = workflow()
    triggers: dict[str, Any] = doc.get("on") or doc[True]  # YAML 1.1 reads `on` as true
    assert triggers["pull_request"]["paths"] == ["workflows/**"]
    assert set(doc["jobs"]) == {"changes", "chaos", "report", "explore"}
    assert "git diff --name-only" in runs("changes")


def test_the_matrix_is_sharded_and_fails_on_a_violation() -> None:
    doc = workflow()
    chaos = doc["jobs"]["chaos"]
    shards = chaos["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, int(doc["env"]["SHARDS"]) + 1))
    assert chaos["strategy"]["fail-fast"] is False
    assert chaos["needs"] == "changes" and "any == 'true'" in chaos["if"]
    script = runs("chaos")
    assert "n8n-chaos install" in script
    assert '--shard "${{ matrix.shard }}/$SHARDS"' in script
    assert "--workflows .n8n-chaos/under-test" in script
    assert "--junitxml" in script and "--alluredir allure-results" in script
    assert "exit $rc" in script and '1) echo "::error::a workflow broke its promise' in script
    uploads = uses("chaos", "actions/upload-artifact")
    assert {s["with"]["name"] for s in uploads if s.get("if") == "always()"} == {
        "allure-results-${{ matrix.shard }}",
        "junit-${{ matrix.shard }}",
    }


def test_one_report_is_merged_from_every_shard() -> None:
    report = workflow()["jobs"]["report"]
    assert "chaos" in report["needs"] and report["if"].startswith("always()")
    download = uses("report", "actions/download-artifact")[0]["with"]
    assert download["pattern"] == "allure-results-*" and download["merge-multiple"] is True
    script = runs("report")
    assert "n8n-chaos report --results allure-results --out allure-report" in script
    assert "--history" in script
    uploaded = [s["with"]["path"] for s in uses("report", "actions/upload-artifact")]
    assert uploaded == ["allure-report/index.html"]
    gate = next(s for s in steps("report") if s.get("name") == "Gate")
    assert "needs.chaos.result" in gate["if"] and "exit 1" in gate["run"]


def test_explore_runs_on_the_changed_workflows_with_the_cache_carried_over() -> None:
    job = workflow()["jobs"]["explore"]
    assert job["needs"] == "changes" and "any == 'true'" in job["if"]
    assert uses("explore", "actions/checkout")[0]["with"]["fetch-depth"] == 0
    script = runs("explore")
    assert '--changed-since "$BASE_SHA"' in script
    assert "--cache-dir .n8n-chaos/explore-cache" in script and "exit $rc" in script
    [restore] = uses("explore", "actions/cache/restore")
    [save] = uses("explore", "actions/cache/save")
    assert restore["with"]["path"] == save["with"]["path"] == ".n8n-chaos/explore-cache"
    assert restore["with"]["key"] == save["with"]["key"]
    assert restore["with"]["restore-keys"] == "n8n-chaos-explore-"
    assert save["if"] == "always()"  # a run that found a violation still keeps what it explored
    # Its Allure results join the merged report (the shards' artifact pattern).
    assert "--alluredir explore-allure" in script
    uploaded = {s["with"]["name"]: s["with"]["path"] for s in uses("explore", "actions/upload")}
    assert uploaded["allure-results-explore"] == "explore-allure"
    assert "explore" in workflow()["jobs"]["report"]["needs"]


def test_every_script_is_valid_bash() -> None:
    bash = shutil.which("bash")
    assert bash is not None
    for job in workflow()["jobs"]:
        for step in steps(job):
            if "run" not in step:
                continue
            script = re.sub(r"\$\{\{[^}]*\}\}", "X", step["run"])
            done = subprocess.run([bash, "-n"], input=script, text=True, capture_output=True)
            assert done.returncode == 0, f"{job} / {step.get('name')}: {done.stderr}"


def test_it_uses_only_commands_and_options_that_exist() -> None:
    text = "\n".join(runs(job) for job in workflow()["jobs"])
    calls = re.findall(r"n8n-chaos ([a-z]+)((?:[^\n]|\\\n)*)", text)
    assert {name for name, _ in calls} >= {"install", "list", "run", "report", "explore"}
    for name, rest in calls:
        command = main.commands.get(name)
        assert command is not None, f"n8n-chaos {name} does not exist"
        known = {o for p in command.params if isinstance(p, click.Option) for o in p.opts}
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest):
            assert option in known | PYTEST_OPTIONS, f"n8n-chaos {name} has no {option}"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_pull_request_tests_only_the_folders_it_changed(tmp_path: Path) -> None:
    pick = next(s for s in steps("changes") if s.get("id") == "pick")["run"]
    repo = tmp_path / "repo"
    for name in ("alpha", "beta", "gamma"):
        (repo / "workflows" / name).mkdir(parents=True)
        (repo / "workflows" / name / "manifest.json").write_text("{}")
        (repo / "workflows" / name / "workflow.json").write_text("{}")
    (repo / "workflows" / "README.md").write_text("not a workflow")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    (repo / "workflows" / "beta" / "workflow.json").write_text('{"changed": true}')
    (repo / "workflows" / "gamma" / "manifest.json").write_text('{"changed": true}')
    (repo / "workflows" / "README.md").write_text("changed, still not a workflow")
    git("commit", "-qam", "change two")

    def picked(event: str) -> dict[str, str]:
        out = tmp_path / f"output-{event}"
        env = {
            "PATH": "/usr/bin:/bin",
            "EVENT": event,
            "BASE_SHA": base,
            "WORKFLOWS_DIR": "workflows",
            "GITHUB_OUTPUT": str(out),
        }
        subprocess.run(["bash", "-c", pick], cwd=repo, env=env, check=True, capture_output=True)
        return dict(line.split("=", 1) for line in out.read_text().splitlines())

    assert picked("pull_request") == {"folders": "beta gamma", "any": "true"}
    assert picked("push") == {"folders": "alpha beta gamma", "any": "true"}
    git("commit", "-q", "--allow-empty", "-m", "nothing")
    base = git("rev-parse", "HEAD")
    assert picked("pull_request") == {"folders": "", "any": "false"}


def test_the_parts_cache_key_names_the_pinned_mitmproxy() -> None:
    """Its venv is a cached part: a new pin must change the key, or every run reinstalls it."""
    from harness.stack.install import MITMPROXY_VERSION

    [cache] = [s for s in steps("chaos") if s.get("uses", "").startswith("actions/cache@")]
    assert f"mitmproxy-{MITMPROXY_VERSION}" in cache["with"]["key"]
