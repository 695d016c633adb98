"""Every bad input to the CLI ends in one line that names the fix, exit 2, and nothing
started (no n8n needed: each is refused before a stack would start)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import ServiceExited
from harness.stack.run import RunContext
from harness.workflow.manifest import BUNDLED_WORKFLOWS


def cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "N8N_CHAOS_RUNS": str(tmp_path / "runs"), **env},
    )


def assert_refused(done: subprocess.CompletedProcess[str], fix: str, tmp_path: Path) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, f"not one line: {done.stderr!r}"
    assert lines[0].startswith("error: ") and fix in lines[0], lines[0]
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir()), "a run was started"


def workflow_copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "workflows"
    for folder in (name, "_ledgers"):  # with the ledger schemas the bundled ones share
        shutil.copytree(BUNDLED_WORKFLOWS / folder, root / folder)
    return root


def test_corrupt_workflow_json(tmp_path: Path) -> None:
    root = workflow_copy(tmp_path, "payment_naive")
    (root / "payment_naive" / "workflow.json").write_text('{"nodes": [')
    done = cli(tmp_path, "run", "--workflows", str(root))
    assert_refused(done, "fix the syntax", tmp_path)


def test_manifest_field_missing(tmp_path: Path) -> None:
    root = workflow_copy(tmp_path, "payment_naive")
    manifest = root / "payment_naive" / "manifest.json"
    doc = json.loads(manifest.read_text())
    del doc["business_key"]
    manifest.write_text(json.dumps(doc))
    assert_refused(cli(tmp_path, "run", "--workflows", str(root)), "add it", tmp_path)


def test_unknown_fault_in_a_scenario(tmp_path: Path) -> None:
    root = workflow_copy(tmp_path, "broken_no_idempotency_key")
    manifest = root / "broken_no_idempotency_key" / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["negative_control"]["caught_by"] = {"retry-no_such_fault-after_commit": "DUPLICATE"}
    manifest.write_text(json.dumps(doc))
    done = cli(tmp_path, "list", "--workflows", str(root))
    assert_refused(done, "`n8n-chaos list` shows them", tmp_path)


@pytest.mark.parametrize("command", ["list", "run"])
def test_a_workflow_folder_given_for_the_folder_of_them(tmp_path: Path, command: str) -> None:
    folder = workflow_copy(tmp_path, "payment_naive") / "payment_naive"
    done = cli(tmp_path, command, "--workflows", str(folder))
    assert_refused(done, "is itself a workflow folder (it holds manifest.json); point", tmp_path)
    assert f"--workflows at its parent, {folder.parent.resolve()}," in done.stderr


def test_a_folder_without_workflow_folders(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = cli(tmp_path, "list", "--workflows", str(tmp_path / "empty"))
    assert_refused(
        done, "no workflow folder (a folder with manifest.json) found under it", tmp_path
    )


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (("--shard", "3/2"), "between 1 and N"),
        (("--shard", "two"), "e.g. --shard 1/3"),
        (("--shard", "1/2", "--shard-timings", "nowhere.json"), "timings.json of an earlier run"),
    ],
)
def test_bad_shard_options(tmp_path: Path, args: tuple[str, ...], fix: str) -> None:
    assert_refused(cli(tmp_path, "run", *args), fix, tmp_path)


def test_a_keyword_that_keeps_no_case(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "-k", "worker_kil-after_commit", "--no-attach")
    assert_refused(done, "-k 'worker_kil-after_commit': no case of the matrix matches", tmp_path)
    listed = cli(tmp_path, "list", "-k", "worker_kil-after_commit")
    assert "0 cases (-k 'worker_kil-after_commit' keeps none of the" in listed.stderr


@pytest.mark.parametrize("command", ["run", "up"])
def test_an_unknown_timing_profile(tmp_path: Path, command: str) -> None:
    done = cli(tmp_path, command, "--n8n-timings", "slow")
    assert_refused(done, "--n8n-timings 'slow' is not a timing profile; give one of", tmp_path)


def test_missing_redis_binary(tmp_path: Path) -> None:
    done = cli(tmp_path, "up", N8N_CHAOS_REDIS_BIN=str(tmp_path / "no-redis-server"))
    assert_refused(done, "point it at a redis-server 7 binary", tmp_path)


def test_a_missing_binary_is_named_with_the_fix(tmp_path: Path) -> None:
    run = RunContext.create(tmp_path)
    try:
        proc = run.process("ghost", [str(tmp_path / "bin" / "ghost")], env={})
        with pytest.raises(ServiceExited, match="n8n-chaos install"):
            proc.start()
        assert not proc.running
    finally:
        run.reaper.close()


@pytest.mark.parametrize(
    ("upstream", "fix"),
    [
        ({"personality": "notoin"}, "use one of 'airtable', 'hubspot', "),
        (
            {"personality": "hubspot", "reference": {"json": "/properties/order_id", "regex": "x"}},
            "capture the business key in one (...)",
        ),
        (
            {"collections": {"deals": {"reads": ["POST /crm/v3/objects/deals/search"]}}},
            "add the route that creates its records",
        ),
    ],
)
def test_a_bad_personality_regex_or_collection_is_one_line(
    tmp_path: Path, upstream: dict[str, object], fix: str
) -> None:
    root = workflow_copy(tmp_path, "crm_search_then_create")
    manifest = root / "crm_search_then_create" / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["upstreams"]["api.hubapi.com"] = upstream
    manifest.write_text(json.dumps(doc))
    done = cli(tmp_path, "run", "--workflows", str(root))
    assert_refused(done, fix, tmp_path)
    assert "field 'upstreams.api.hubapi.com." in done.stderr
