"""`--backend compose` intercepts as the native backend does: the proxy runs on the host, each
n8n container sends its outbound HTTPS through its own listener and trusts the run's CA from
the bind-mounted certificate; an unmapped host gets the proxy's 502."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.stack.docker.project import CONTAINER_CA_CERT
from harness.stack.install import Installer
from harness.stack.stack import Stack, StackConfig
from tests.integration.test_intercept import trigger


@pytest.fixture(scope="module")
def compose_stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    config = StackConfig(
        backend="compose",
        workers=1,
        ready_timeout_s=600.0,  # a container's n8n migrates a fresh database
        # n8n's shipped lock times: these tests crash nothing, and with the fast ones a worker
        # starved of CPU for 5 s (CI's load) lost its job's lock, the stall sweep failed the
        # execution, and main never answered the webhook (a CI rehearsal waited 240 s).
        n8n_timings="default",
        runs_root=tmp_path_factory.mktemp("runs"),
    )
    stack = Stack.start(Installer().install(), config)
    try:
        yield stack
    finally:
        stack.stop()


def test_a_container_reaches_the_provider_through_the_hosts_proxy(compose_stack: Stack) -> None:
    stack = compose_stack
    assert stack.intercept is not None and stack.containers is not None
    from harness.stack.docker.engine import client

    worker = client().containers.get(stack.containers.container_name("worker0"))
    env = dict(item.split("=", 1) for item in worker.attrs["Config"]["Env"])
    assert env["NODE_EXTRA_CA_CERTS"] == CONTAINER_CA_CERT
    assert env["HTTPS_PROXY"] == f"http://{stack.intercept.addresses['worker0']}"
    mounts = {m["Destination"]: m for m in worker.attrs["Mounts"]}
    assert mounts[CONTAINER_CA_CERT]["Source"] == str(stack.intercept.ca_cert)
    assert mounts[CONTAINER_CA_CERT]["RW"] is False
    # The proxy is a process of this machine, in the run's process tree.
    assert stack.intercept.process.pid is not None
    assert Path(f"/proc/{stack.intercept.process.pid}").exists()

    stack.intercept.set_hosts(["api.stripe.com"])
    seen = len(stack.intercept.journal())
    # A container's first execution on a machine busy with other stacks' boots (CI) can take
    # long: a deadline that only a hang misses.
    answer = trigger(stack, "POST", "https://api.stripe.com/v1/payment_intents", timeout_s=240)
    new = [e for e in stack.intercept.journal()[seen:] if e.host == "api.stripe.com"]
    assert [(e.outcome, e.listener) for e in new] == [("forwarded", "worker0")], new
    assert new[0].status == answer["statusCode"] != 502, answer
    assert not [e for e in stack.intercept.journal() if e.outcome == "tls_failed"]

    refused = trigger(stack, "GET", "https://example.com/", timeout_s=240)
    assert refused["statusCode"] == 502 and "no fake answers host example.com" in str(refused)
