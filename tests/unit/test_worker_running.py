"""Which worker runs an execution now, read from the workers' logs: a resumed execution (Wait
node) has a queue job per part, and its parts can run on different workers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from harness.stack.n8n import JobLog, N8nProcess
from harness.stack.stack import Stack


def _worker(tmp_path: Path, name: str, lines: list[str]) -> N8nProcess:
    log = tmp_path / f"{name}.log"
    log.write_text("".join(f'{line} {{ "scopes": ["scaling"] }}\n' for line in lines))
    worker = object.__new__(N8nProcess)
    worker.process = SimpleNamespace(log_path=log)  # type: ignore[assignment]
    worker.job_log = JobLog()
    return worker


def _stack(*workers: N8nProcess) -> Stack:
    stack = object.__new__(Stack)
    stack.workers = list(workers)
    return stack


def test_the_resumed_part_is_found_on_the_worker_that_runs_it(tmp_path: Path) -> None:
    # As in a CI run: execution 146 parked on worker0 (job 146), resumed on worker1 (job 147).
    stack = _stack(
        _worker(
            tmp_path,
            "worker0",
            [
                "09:44:20.437   info    Worker started execution 146 (job 146)",
                "09:44:20.818   info    Worker finished execution 146 (job 146)",
            ],
        ),
        _worker(
            tmp_path, "worker1", ["09:44:21.004   info    Worker started execution 146 (job 147)"]
        ),
    )
    assert stack.worker_running("146") == 1


def test_a_finished_execution_names_the_worker_of_its_last_part(tmp_path: Path) -> None:
    stack = _stack(
        _worker(
            tmp_path,
            "worker0",
            [
                "09:44:21.004   info    Worker started execution 7 (job 8)",
                "09:44:21.400   info    Worker finished execution 7 (job 8)",
            ],
        ),
        _worker(
            tmp_path,
            "worker1",
            [
                "09:44:20.004   info    Worker started execution 7 (job 7)",
                "09:44:20.400   info    Worker finished execution 7 (job 7)",
                "09:44:20.500   info    Worker started execution 17 (job 17)",
            ],
        ),
    )
    assert stack.worker_running("7") == 0
    assert stack.worker_running("17") == 1
    assert stack.worker_running("1") is None


def test_a_stalled_job_taken_up_again_is_found_where_it_runs_now(tmp_path: Path) -> None:
    # The killed worker's log keeps the start it never finished; the job's new start is later.
    stack = _stack(
        _worker(tmp_path, "worker0", ["09:00:01.000   info    Worker started execution 5 (job 5)"]),
        _worker(tmp_path, "worker1", ["09:00:31.000   info    Worker started execution 5 (job 5)"]),
    )
    assert stack.worker_running("5") == 1


def test_the_log_is_read_as_it_grows_a_half_written_line_waits(tmp_path: Path) -> None:
    worker = _worker(
        tmp_path, "worker0", ["09:44:20.437   info    Worker started execution 5 (job 5)"]
    )
    assert worker.jobs_of("5") == {5: ("09:44:20.437", False)}
    assert worker.running_executions() == {"5"}
    with worker.process.log_path.open("a") as log:
        log.write("09:44:21.000   info    Worker finished execution 5 (job 5)")  # no newline yet
        log.flush()
        assert worker.jobs_of("5") == {5: ("09:44:20.437", False)}
        log.write(' { "scopes": ["scaling"] }\n')
    assert worker.jobs_of("5") == {5: ("09:44:20.437", True)}
    assert worker.jobs_of("6") == {}
    assert worker.running_executions() == set()
