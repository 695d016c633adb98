"""Link faults by toxics: links named by who and service, holds of at least a second, the
proof read from Toxiproxy's listing and from the kernel's socket table (a real loopback
connection here; Toxiproxy itself is a small fake)."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from harness.engine.faults import get_fault
from harness.engine.faults.base import FaultContext
from harness.engine.faults.toxic_link import (
    ToxicLink,
    check_hold,
    check_link,
    silent,
    stall_detection_s,
)
from harness.engine.journal import Journal
from harness.errors import ConfigError
from harness.stack.ports import established_to
from harness.stack.stack import StackConfig
from harness.stack.toxiproxy import Toxic


class FakeProxy:
    def __init__(self, name: str, port: int) -> None:
        self.name, self.listen_port = name, port
        self.listed: dict[str, Toxic] = {}

    def add_toxic(self, type: str, *, stream: Any, name: str, **attributes: int) -> Toxic:
        self.listed[name] = Toxic(name, type, stream, 1.0, dict(attributes))
        return self.listed[name]

    def remove_toxic(self, name: str) -> None:
        del self.listed[name]

    def toxics(self) -> list[Toxic]:
        return list(self.listed.values())


@dataclasses.dataclass
class FakeStack:
    proxies: dict[str, FakeProxy]
    workers: list[Any]
    config: StackConfig = dataclasses.field(default_factory=StackConfig)
    n8n_processes: tuple[Any, ...] = ()
    containers: None = None

    @property
    def toxiproxy(self) -> FakeStack:
        return self

    def proxy(self, name: str) -> FakeProxy:
        return self.proxies[name]

    def log_marks(self) -> dict[str, int]:
        return {}

    def revive(self, reconnecting: object = None) -> list[str]:
        return []


@pytest.fixture
def listener() -> Iterator[tuple[int, list[socket.socket]]]:
    server = socket.create_server(("127.0.0.1", 0))
    port, held = server.getsockname()[1], []
    try:
        yield port, held
    finally:
        for sock in held:
            sock.close()
        server.close()


def connect(port: int, held: list[socket.socket]) -> None:
    held.append(socket.create_connection(("127.0.0.1", port)))


def context(port: int, timings: str = "fast") -> tuple[FaultContext, FakeStack]:
    proxies = {
        f"worker{i}_{s}": FakeProxy(f"worker{i}_{s}", port)
        for i in (0, 1)
        for s in ("redis", "postgres")
    }
    workers = [SimpleNamespace(name=f"worker{i}") for i in range(2)]
    stack = FakeStack(proxies, workers, StackConfig(n8n_timings=timings))
    ctx = FaultContext(cast(Any, stack), Journal(), "k1", target_worker=1)
    return ctx, stack


def test_links_are_named_by_who_and_service() -> None:
    assert check_link("workers_redis") == "workers_redis"
    with pytest.raises(ConfigError, match="who one of main, webhook, workers, target"):
        check_link("worker_redis")
    with pytest.raises(ConfigError, match="unknown link 'main'"):
        ToxicLink(("main",), silent())


def test_a_hold_shorter_than_a_second_is_refused() -> None:
    assert check_hold(None) is None and check_hold(1.0) == 1.0
    with pytest.raises(ConfigError, match="at least 1 s"):
        ToxicLink(("target_redis",), silent(), hold_s=0.5)


def test_the_default_hold_spans_the_stack_s_stall_detection() -> None:
    assert stall_detection_s(StackConfig()) == 12.0  # lock 5 s + stall check 5 s + 2 s
    assert stall_detection_s(StackConfig(n8n_timings="default")) == 92.0  # 60 s + 30 s + 2 s


def test_established_counts_client_sockets_to_a_port(
    listener: tuple[int, list[socket.socket]], tmp_path: Path
) -> None:
    port, held = listener
    before = established_to(port)
    connect(port, held)
    connect(port, held)
    assert established_to(port) == before + 2
    table = tmp_path / "tcp"
    table.write_text(
        "  sl  local_address rem_address   st\n"
        f"   0: 0100007F:9C40 0100007F:{port:04X} 01 0\n"
        f"   1: 0100007F:9C41 0100007F:{port:04X} 06 0\n"  # TIME_WAIT: not held
    )
    assert established_to(port, (table,)) == 1


def test_silent_targets_one_worker_both_ways_and_proves_the_held_socket(
    listener: tuple[int, list[socket.socket]],
) -> None:
    port, held = listener
    connect(port, held)
    ctx, stack = context(port)
    fault = get_fault("worker_redis_silent")
    fault.inject(ctx)
    listed = stack.proxies["worker1_redis"].listed
    # Each stream: an hour's latency (holds a close the far end sends), then the drop.
    assert [(t.type, t.stream, t.attributes) for t in listed.values()] == [
        ("latency", "upstream", {"latency": 3_600_000}),
        ("latency", "downstream", {"latency": 3_600_000}),
        ("timeout", "upstream", {"timeout": 0}),
        ("timeout", "downstream", {"timeout": 0}),
    ]
    assert not stack.proxies["worker0_redis"].listed  # one worker, not all
    assert fault.duration_s == 12.0
    fault.heal(ctx)
    fault.heal(ctx)  # idempotent
    assert not listed
    proof = fault.proof(ctx)
    assert proof is not None and "worker1_redis:chaos_worker_redis_silent_upstream" in proof
    assert "still at the heal (/proc/net/tcp)" in proof


def test_no_socket_on_the_link_is_no_proof(listener: tuple[int, list[socket.socket]]) -> None:
    port, _ = listener  # nothing connected: the toxic held nothing
    ctx, _ = context(port)
    fault = get_fault("redis_silent")
    fault.inject(ctx)
    fault.heal(ctx)
    assert fault.proof(ctx) is None


def test_redis_slow_delays_commands_by_the_lock_duration(
    listener: tuple[int, list[socket.socket]],
) -> None:
    port, held = listener
    connect(port, held)
    ctx, stack = context(port, "default")
    fault = get_fault("redis_slow")
    fault.inject(ctx)
    (toxic,) = stack.proxies["worker1_redis"].listed.values()
    assert (toxic.type, toxic.stream, toxic.attributes) == (
        "latency",
        "upstream",
        {"latency": 60000},
    )
    fault.heal(ctx)
