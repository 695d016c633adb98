"""What Toxiproxy in every link costs: executions per second of webhook -> worker ->
provider with every hop proxied (client -> main, worker -> provider, n8n -> Postgres and
Redis) against the same workflow reached and calling out directly (client -> main and
worker -> provider not proxied; n8n's own Postgres and Redis links stay proxied, since the
stack is wired that way). Rounds alternate so both see the same load.

    python bench/proxy_overhead.py                      # 3 rounds of 20 s, 4 senders
    python bench/proxy_overhead.py --rounds 5 --seconds 30 --senders 8

Writes bench/results/proxy_overhead.json.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from _common import load, table, write_result

from harness.stack.install import Installer
from harness.stack.stack import Stack, StackConfig


def email_workflow(path: str, provider_url: str) -> dict[str, Any]:
    return {
        "name": f"bench {path}",
        "nodes": [
            {
                "id": str(uuid.uuid4()),
                "name": "Webhook",
                "type": "n8n-nodes-base.webhook",
                "typeVersion": 2.1,
                "position": [0, 0],
                "webhookId": str(uuid.uuid4()),
                "parameters": {"httpMethod": "POST", "path": path, "responseMode": "lastNode"},
            },
            {
                "id": str(uuid.uuid4()),
                "name": "Send",
                "type": "n8n-nodes-base.httpRequest",
                "typeVersion": 4.2,
                "position": [220, 0],
                "parameters": {
                    "method": "POST",
                    "url": provider_url + "/v1/emails",
                    "sendBody": True,
                    "contentType": "json",
                    "specifyBody": "json",
                    "jsonBody": "={{ JSON.stringify($json.body) }}",
                    "options": {},
                },
            },
        ],
        "connections": {"Webhook": {"main": [[{"node": "Send", "type": "main", "index": 0}]]}},
        "settings": {"executionOrder": "v1"},
    }


def drive(url: str, seconds: float, senders: int) -> dict[str, Any]:
    latencies: list[float] = []
    failures = 0
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def sender() -> None:
        nonlocal failures
        with httpx.Client(timeout=30) as client:
            while time.monotonic() < end:
                body = {"to": "a@example.com", "subject": "bench", "reference": uuid.uuid4().hex}
                started = time.monotonic()
                try:
                    ok = client.post(url, json=body).status_code == 200
                except httpx.HTTPError:
                    ok = False
                with lock:
                    if ok:
                        latencies.append(time.monotonic() - started)
                    else:
                        failures += 1

    threads = [threading.Thread(target=sender) for _ in range(senders)]
    before = load()
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    return {
        "executions_per_s": round(len(latencies) / elapsed, 2),
        "median_ms": round(statistics.median(latencies) * 1000) if latencies else None,
        "failures": failures,
        "load_before": before,
        "load_after": load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--senders", type=int, default=4)
    args = parser.parse_args()

    inst = Installer().install()
    with tempfile.TemporaryDirectory(prefix="n8n-chaos-bench-runs-") as runs:
        stack = Stack.start(inst, StackConfig(runs_root=Path(runs)))
        try:
            provider = stack.require_provider()
            proxied = stack.deploy(
                email_workflow("bench-proxied", "={{ $env.N8N_CHAOS_UPSTREAM_PROVIDER }}")
            )
            direct = stack.deploy(email_workflow("bench-direct", f"http://{provider.address}"))
            targets = {
                "proxied": f"{stack.webhook_base_url}/bench-proxied",
                "direct": f"{stack.main.base_url}/webhook/bench-direct",
            }
            del proxied, direct
            for url in targets.values():  # warm up both paths
                drive(url, 3, 1)
            results: list[dict[str, Any]] = []
            for round_no in range(1, args.rounds + 1):
                for path, url in targets.items():
                    result = drive(url, args.seconds, args.senders)
                    results.append({"path": path, "round": round_no, **result})
                    print(f"round {round_no} {path}: {result['executions_per_s']} exec/s")
        finally:
            stack.stop()
    rows = [
        (
            r["path"],
            r["round"],
            r["executions_per_s"],
            r["median_ms"],
            r["failures"],
            f"{r['load_before']}/{r['load_after']}",
        )
        for r in results
    ]
    print(f"{args.senders} senders, {args.seconds:.0f} s per round")
    print(table(["path", "round", "exec/s", "median ms", "failures", "load"], rows))
    summary = {
        path: statistics.median(r["executions_per_s"] for r in results if r["path"] == path)
        for path in ("proxied", "direct")
    }
    overhead = 1 - summary["proxied"] / summary["direct"] if summary["direct"] else None
    print(
        f"median exec/s: proxied {summary['proxied']}, direct {summary['direct']}"
        + (f"; Toxiproxy costs {overhead:.0%}" if overhead is not None else "")
    )
    written = write_result(
        "proxy_overhead",
        {
            "senders": args.senders,
            "seconds": args.seconds,
            "summary": summary,
            "overhead": round(overhead, 3) if overhead is not None else None,
            "runs": results,
        },
    )
    print(f"written: {written}")


if __name__ == "__main__":
    main()
