"""Parallel stacks, shards and port reservations: no n8n, no real services."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.matrix.sharding import assign, hash_shard, load_timings, parse_shard, write_timings
from harness.stack import ports
from harness.stack.run import RunContext

IDS = [f"tests/chaos/test_matrix.py::test_exactly_once[case-{i}]" for i in range(60)]


def test_shard_spec_is_checked() -> None:
    assert parse_shard("2/3") == (2, 3)
    for bad in ("3", "0/2", "3/2", "a/b", "1/0", ""):
        with pytest.raises(ConfigError, match="shard"):
            parse_shard(bad)


def test_hash_split_is_a_stable_partition() -> None:
    split = assign(IDS, 3)
    assert set(split.values()) == {1, 2, 3}
    assert sorted(split) == sorted(IDS)
    # A test's shard does not depend on what else is selected.
    assert assign(IDS[::7], 3) == {t: split[t] for t in IDS[::7]}
    assert all(hash_shard(t, 3) == split[t] for t in IDS)


def test_timings_balance_the_shards() -> None:
    costs = {t: float(i % 10 + 1) for i, t in enumerate(IDS)}
    split = assign(IDS, 3, costs)
    loads = [sum(costs[t] for t in IDS if split[t] == s) for s in (1, 2, 3)]
    assert max(loads) - min(loads) <= max(costs.values())
    assert assign(list(reversed(IDS)), 3, costs) == split  # same selection, same split
    # A test without a measurement costs the median; every test still lands somewhere.
    assert set(assign([*IDS, "new"], 3, costs)) == {*IDS, "new"}


def test_timings_files_merge_and_bad_ones_name_the_fix(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    write_timings(first, {"x": 1.0, "y": 2.0})
    write_timings(second, {"y": 3.0})
    assert load_timings([first, second]) == {"x": 1.0, "y": 3.0}
    (tmp_path / "bad.json").write_text("[]")
    with pytest.raises(ConfigError, match=r"timings\.json"):
        load_timings([tmp_path / "bad.json"])
    with pytest.raises(ConfigError, match="earlier run"):
        load_timings([tmp_path / "missing.json"])


def test_free_ports_are_reserved_and_never_handed_out_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("N8N_CHAOS_PORTS_DIR", str(tmp_path))
    with ports.collect_ports() as taken:
        got = [ports.free_port() for _ in range(50)]
    assert taken == got
    assert len(set(got)) == 50
    assert all((tmp_path / str(p)).read_text() == str(os.getpid()) for p in got)
    ports.release_ports(got)
    assert not any((tmp_path / str(p)).exists() for p in got)


def test_free_ports_lie_below_the_kernels_ephemeral_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An outgoing connection's local port comes from that range: it cannot take ours.
    monkeypatch.setenv("N8N_CHAOS_PORTS_DIR", str(tmp_path))
    ephemeral = tmp_path / "ip_local_port_range"
    ephemeral.write_text("32768\t60999\n")
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE", ephemeral)
    got = [ports.free_port() for _ in range(20)]
    assert all(20000 <= p < 32768 for p in got), got
    ports.release_ports(got)
    ephemeral.write_text("21000\t60999\n")  # no room below it: the kernel's choice
    assert ports._below_ephemeral() is None


def test_a_port_held_by_a_live_process_is_skipped_a_dead_ones_taken_over(
    tmp_path: Path,
) -> None:
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "40001").write_text(str(holder.pid))
        assert not ports._reserve(40001, tmp_path)
    finally:
        holder.kill()
        holder.wait()
    assert ports._reserve(40001, tmp_path)
    assert (tmp_path / "40001").read_text() == str(os.getpid())


def test_an_explicit_run_dir_that_is_taken_gets_a_suffix(tmp_path: Path) -> None:
    first = RunContext.create(run_dir=tmp_path / "inv" / "gw0")
    second = RunContext.create(run_dir=tmp_path / "inv" / "gw0")
    try:
        assert first.run_dir.name == "gw0"
        assert second.run_dir.name == "gw0-2"
        assert first.run_id != second.run_id
        assert not (tmp_path / "inv" / "latest").exists()
    finally:
        first.reaper.close()
        second.reaper.close()


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "N8N_CHAOS_RUNS": str(tmp_path / "runs")},
    )


def test_shards_of_a_pytest_run_partition_the_selection(tmp_path: Path) -> None:
    (tmp_path / "test_many.py").write_text(
        "import pytest\n@pytest.mark.parametrize('i', range(30))\ndef test_x(i):\n    pass\n"
    )
    seen: list[str] = []
    for index in (1, 2):
        done = _pytest(tmp_path, "--co", f"--shard={index}/2", "test_many.py")
        assert done.returncode == 0, done.stdout + done.stderr
        seen += [line for line in done.stdout.splitlines() if "::" in line]
    assert len(seen) == 30 == len(set(seen))


def test_xdist_workers_get_one_invocation_dir_with_a_folder_each(tmp_path: Path) -> None:
    (tmp_path / "test_dirs.py").write_text(
        "import pytest, json\n"
        "@pytest.mark.parametrize('i', range(8))\n"
        "def test_dir(i, n8n_chaos_config, worker_id, tmp_path_factory):\n"
        "    out = tmp_path_factory.getbasetemp().parent.parent / 'dirs.txt'\n"
        "    with open(out, 'a') as f:\n"
        "        f.write(f'{worker_id} {n8n_chaos_config.run_dir}\\n')\n"
    )
    done = _pytest(tmp_path, "-n", "2", "test_dirs.py", f"--basetemp={tmp_path / 'bt'}")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {tuple(line.split()) for line in (tmp_path / "dirs.txt").read_text().splitlines()}
    dirs = {Path(d) for _, d in lines}
    assert {d.name for d in dirs} == {w for w, _ in lines} <= {"gw0", "gw1"}
    assert len({d.parent for d in dirs}) == 1  # one invocation
    assert next(iter(dirs)).parent.parent == (tmp_path / "runs").resolve()
