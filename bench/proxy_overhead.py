"""What the proxies in the path cost, in one run on one stack:

- Toxiproxy in every link: executions per second of webhook -> worker -> provider with every
  hop proxied (client -> main, worker -> provider, n8n -> Postgres and Redis) against the
  same workflow reached and calling out directly (client -> main and worker -> provider not
  proxied; n8n's own Postgres and Redis links stay proxied, since the stack is wired that
  way). Rounds alternate so both see the same load.
- The intercepting proxy (mitmproxy) on outbound requests: the median latency it adds to one
  request, from a client (keep-alive and new connections) and from n8n (bench/_interception.py),
  and where a new connection's time goes, phase by phase, with the proxy's CPU per request
  (bench/_proxy_phases.py).
- Optionally (--matrix KEYWORD) the wall time of that part of the crash matrix with the
  stack's interception on and off (``StackConfig.intercept``), one run after the other.

    python bench/proxy_overhead.py                      # 3 rounds of 20 s, 4 senders
    python bench/proxy_overhead.py --rounds 5 --seconds 30 --senders 8
    python bench/proxy_overhead.py --rounds 0 --requests 200 --executions 60 \\
        --matrix "payment_idempotent and no_fault"

Writes bench/results/proxy_overhead.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from _common import load, table, write_result
from _interception import HOST, PATH, client_latency, n8n_latency, route_to_stripe_fake
from _proxy_phases import phase_latency
from matrix import pytest_run

from harness.stack.install import Installer
from harness.stack.stack import Stack, StackConfig
from harness.workflow.minimal_workflow import webhook_then_http


def email_workflow(path: str, provider_url: str) -> dict[str, Any]:
    return webhook_then_http(
        path,
        "Send",
        {
            "method": "POST",
            "url": provider_url + "/v1/emails",
            "sendBody": True,
            "contentType": "json",
            "specifyBody": "json",
            "jsonBody": "={{ JSON.stringify($json.body) }}",
            "options": {},
        },
        name=f"bench {path}",
    )


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


def toxiproxy_rounds(stack: Stack, rounds: int, seconds: float, senders: int) -> list[Any]:
    provider = stack.require_provider()
    stack.deploy(email_workflow("bench-proxied", "={{ $env.N8N_CHAOS_UPSTREAM_PROVIDER }}"))
    stack.deploy(email_workflow("bench-direct", f"http://{provider.address}"))
    targets = {
        "proxied": f"{stack.webhook_base_url}/bench-proxied",
        "direct": f"{stack.main.base_url}/webhook/bench-direct",
    }
    for url in targets.values():  # warm up both paths
        drive(url, 3, 1)
    results: list[dict[str, Any]] = []
    for round_no in range(1, rounds + 1):
        for path, url in targets.items():
            result = drive(url, seconds, senders)
            results.append({"path": path, "round": round_no, **result})
            print(f"round {round_no} {path}: {result['executions_per_s']} exec/s", flush=True)
    return results


def toxiproxy_summary(results: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
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
    print(f"Toxiproxy: {args.senders} senders, {args.seconds:.0f} s per round")
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
    return {
        "senders": args.senders,
        "seconds": args.seconds,
        "summary": summary,
        "overhead": round(overhead, 3) if overhead is not None else None,
        "runs": results,
    }


def interception_table(client: dict[str, Any], n8n: dict[str, Any] | None) -> None:
    rows = []
    for mode in ("keep-alive", "new connection"):
        m = client[mode]
        rows.append(
            (
                f"client, {mode} ({client['requests']} each)",
                m["direct_median_ms"],
                m["intercepted_median_ms"],
                m["added_median_ms"],
                f"{client['load_before']}/{client['load_after']}",
            )
        )
    if n8n is not None:
        rows.append(
            (
                f"n8n execution ({n8n['executions']} each)",
                n8n["direct_median_ms"],
                n8n["intercepted_median_ms"],
                n8n["added_median_ms"],
                f"{n8n['load_before']}/{n8n['load_after']}",
            )
        )
    print("intercepting proxy: median ms per request, direct (Toxiproxy link) vs intercepted")
    print(table(["path", "direct", "intercepted", "added", "load"], rows))


def phases_table(phases: dict[str, Any]) -> None:
    names = list(phases["intercepted_ms"])
    rows = [
        (path, *(phases[f"{path}_ms"].get(name, "") for name in names))
        for path in ("direct", "intercepted")
    ]
    print(
        f"a new connection per request, phase medians in ms ({phases['requests']} each; "
        f"load {phases['load_before']}/{phases['load_after']}): added "
        f"{phases['added_median_ms']} ms, proxy CPU {phases['proxy_cpu_ms']} ms per request"
    )
    print(table(["path", *names], rows))


def matrix_with_and_without(keyword: str) -> dict[str, Any]:
    bench_dir = str(Path(__file__).resolve().parent)
    # The pytest run loads bench/_config_plugin.py (-p) from here.
    env = {"PYTHONPATH": ":".join(p for p in (bench_dir, os.environ.get("PYTHONPATH")) if p)}
    off = {**env, "N8N_CHAOS_BENCH_CONFIG": '{"intercept": false}'}
    runs = {}
    for label, extra, run_env in (
        ("intercepted", [], env),
        ("not intercepted", ["-p", "_config_plugin"], off),
    ):
        runs[label] = pytest_run(keyword, extra, run_env)
        print(f"matrix {label}: {runs[label]['wall_s']} s, {runs[label]['outcome']}", flush=True)
    on, off = runs["intercepted"]["wall_s"], runs["not intercepted"]["wall_s"]
    added = round(on / off - 1, 3) if off else None
    rows = [
        (label, r["wall_s"], r["outcome"], f"{r['load_before']}/{r['load_after']}")
        for label, r in runs.items()
    ]
    print(f"matrix -k {keyword!r}: interception adds {added:.1%}" if added is not None else "")
    print(table(["stack", "wall s", "outcome", "load"], rows))
    return {"keyword": keyword, "added": added, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="Toxiproxy rounds; 0 skips")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--requests", type=int, default=200, help="client requests per path")
    parser.add_argument("--executions", type=int, default=60, help="n8n executions per path")
    parser.add_argument("--matrix", metavar="KEYWORD", help="also time this -k with/without")
    args = parser.parse_args()

    inst = Installer().install()
    with tempfile.TemporaryDirectory(prefix="n8n-chaos-bench-runs-") as runs:
        stack = Stack.start(inst, StackConfig(runs_root=Path(runs)))
        try:
            toxiproxy = toxiproxy_rounds(stack, args.rounds, args.seconds, args.senders)
            route_to_stripe_fake(stack)
            client = client_latency(stack, args.requests)
            phases = phase_latency(stack, HOST, PATH, args.requests)
            n8n = n8n_latency(stack, args.executions) if args.executions else None
        finally:
            stack.stop()
    data: dict[str, Any] = {}
    if toxiproxy:
        data |= toxiproxy_summary(toxiproxy, args)
    interception_table(client, n8n)
    phases_table(phases)
    data["interception"] = {"client": client, "phases": phases, "n8n": n8n}
    if args.matrix:
        data["matrix"] = matrix_with_and_without(args.matrix)
    written = write_result("proxy_overhead", data)
    print(f"written: {written}")


if __name__ == "__main__":
    main()
