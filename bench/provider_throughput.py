"""Throughput of the fake payment provider: new idempotency keys vs replays of stored ones.

Starts the provider as a child process on a throw-away ledger, sends a bounded number of
POST /v1/charges with httpx async at a fixed concurrency, and prints the figures side by side.

    python bench/provider_throughput.py [--requests 2000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from fake_providers.payment import ProviderControl, ProviderProcess, launch

# Which logical charge request number n sends: new keys use a fresh charge per request,
# replays cycle through charges that were already made (same key, same payload).
ChargeChoice = Callable[[int], int]


@dataclass(frozen=True)
class LoadResult:
    requests: int
    seconds: float
    statuses: Counter[int]
    latencies_ms: list[float]
    commits_added: int
    server_cpu_seconds: float

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds

    @property
    def server_cpu_ms_per_request(self) -> float:
        return self.server_cpu_seconds * 1000 / self.requests

    def latency_percentile(self, percent: int) -> float:
        return statistics.quantiles(self.latencies_ms, n=100)[percent - 1]


async def _load(
    base_url: str, run: str, requests: int, concurrency: int, choose: ChargeChoice
) -> tuple[float, Counter[int], list[float]]:
    numbers = itertools.count()
    statuses: Counter[int] = Counter()
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=30) as client:

        async def worker() -> None:
            while (n := next(numbers)) < requests:
                charge = choose(n)
                sent = time.perf_counter()
                response = await client.post(
                    "/v1/charges",
                    json={
                        "amount": 1000 + charge,
                        "currency": "eur",
                        "reference": f"order-{run}-{charge}",
                    },
                    headers={"Idempotency-Key": f"bench-{run}-{charge}"},
                )
                latencies.append((time.perf_counter() - sent) * 1000)
                statuses[response.status_code] += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - started, statuses, latencies


def measure(
    process: ProviderProcess,
    control: ProviderControl,
    run: str,
    requests: int,
    concurrency: int,
    choose: ChargeChoice,
) -> LoadResult:
    commits_before = len(control.commits())
    cpu_before = _cpu_seconds(process.process.pid)
    seconds, statuses, latencies = asyncio.run(
        _load(process.base_url, run, requests, concurrency, choose)
    )
    return LoadResult(
        requests,
        seconds,
        statuses,
        latencies,
        len(control.commits()) - commits_before,
        _cpu_seconds(process.process.pid) - cpu_before,
    )


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of the provider process (Linux /proc), all threads included.

    The client shares the machine, so requests/s is bounded by both; the server's CPU per
    request is the provider's own cost."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    user_ticks, system_ticks = int(fields[11]), int(fields[12])
    return (user_ticks + system_ticks) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    run = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="provider-bench-") as scratch:
        process = launch(Path(scratch) / "ledger.db")
        try:
            with ProviderControl(process.control_url) as control:
                fresh = measure(process, control, run, args.requests, args.concurrency, lambda n: n)
                replays = measure(
                    process,
                    control,
                    run,
                    args.requests,
                    args.concurrency,
                    lambda n: n % args.concurrency,
                )
        finally:
            process.stop()
    _report(args.requests, args.concurrency, {"new keys": fresh, "replays": replays})


def _report(requests: int, concurrency: int, results: dict[str, LoadResult]) -> None:
    print(
        f"fake payment provider, POST /v1/charges: {requests} requests per column, "
        f"concurrency {concurrency}, httpx async over 127.0.0.1"
    )
    rows: list[tuple[str, Callable[[LoadResult], str]]] = [
        ("requests/s", lambda r: f"{r.per_second:.0f}"),
        ("wall time s", lambda r: f"{r.seconds:.2f}"),
        ("server CPU ms/req", lambda r: f"{r.server_cpu_ms_per_request:.2f}"),
        ("latency p50 ms", lambda r: f"{r.latency_percentile(50):.1f}"),
        ("latency p99 ms", lambda r: f"{r.latency_percentile(99):.1f}"),
        ("statuses", lambda r: " ".join(f"{s}x{c}" for s, c in sorted(r.statuses.items()))),
        ("commits added", lambda r: str(r.commits_added)),
    ]
    print(f"{'':18}" + "".join(f"{name:>14}" for name in results))
    for label, cell in rows:
        print(f"{label:18}" + "".join(f"{cell(result):>14}" for result in results.values()))


if __name__ == "__main__":
    main()
