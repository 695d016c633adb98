"""Service triggers on the harness side: the fake as the sender (Stripe's backoff, one
signed delivery per attempt), the Stripe signature and schedule, and the one error line for a
trigger type without a fake."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from fake_providers.payment.control import ProviderControl
from fake_providers.payment.triggers.stripe import HOUR_S, StripeTrigger, signature_header
from harness.engine import workload
from harness.engine.service_sender import ServiceSender
from harness.engine.workload import History, SenderPolicy
from harness.errors import ConfigError
from harness.workflow.manifest import load_manifest
from harness.workflow.workflow_json import webhook_node

BUNDLED = Path(__file__).resolve().parents[2] / "workflows_under_test"


class ScriptedFake:
    """Stands in for ProviderControl: answers deliveries with the statuses given, in order."""

    def __init__(self, statuses: list[int | None]) -> None:
        self.statuses = statuses
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def deliver_event(
        self, trigger: str, url: str, event: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        self.calls.append((trigger, url, event))
        return {"status": self.statuses.pop(0), "detail": "", "event": event["id"]}


def sender(fake: ScriptedFake, history: History) -> ServiceSender:
    provider = cast(ProviderControl, fake)
    return ServiceSender(
        StripeTrigger(), provider, "http://n8n/webhook/x/webhook", history, SenderPolicy()
    )


def test_the_signature_is_hmac_sha256_of_time_dot_payload() -> None:
    header = signature_header(b'{"id":"evt_1"}', "whsec_test", 1_700_000_000)
    expected = hmac.new(b"whsec_test", b'1700000000.{"id":"evt_1"}', hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    assert signature_header(b'{"id":"evt_1"}', "whsec_test", 1_700_000_001) != header
    assert signature_header(b'{"id":"evt_2"}', "whsec_test", 1_700_000_000) != header
    assert signature_header(b'{"id":"evt_1"}', "whsec_other", 1_700_000_000) != header


def test_stripes_schedule_doubles_and_fits_in_three_days() -> None:
    delays = StripeTrigger.retry_delays_s
    assert delays[0] == HOUR_S
    assert all(b == 2 * a for a, b in itertools.pairwise(delays))
    assert sum(delays) / HOUR_S <= 72  # Stripe retries for up to three days


def test_the_fake_resends_on_every_non_2xx_with_stripes_backoff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(workload.time, "sleep", waits.append)
    fake = ScriptedFake([500, None, 401, 200])
    history = History()
    last = sender(fake, history).deliver({"id": "evt_1", "type": "t"})
    assert last.status == 200
    assert [a.outcome for a in history.attempts] == ["info", "info", "fail", "ok"]
    assert waits == list(StripeTrigger.retry_delays_s[:3])
    assert {call[1] for call in fake.calls} == {"http://n8n/webhook/x/webhook"}
    assert all(call[2]["id"] == "evt_1" for call in fake.calls)  # the same event id each time


def test_the_fake_gives_up_after_its_last_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(workload.time, "sleep", waits.append)
    attempts = len(StripeTrigger.retry_delays_s) + 1
    history = History()
    sender(ScriptedFake([500] * attempts), history).deliver({"id": "evt_1", "type": "t"})
    assert len(history.attempts) == attempts
    assert waits == list(StripeTrigger.retry_delays_s)


def unserved_workflow() -> dict[str, Any]:
    return {
        "name": "gh",
        "nodes": [
            {"name": "On push", "type": "n8n-nodes-base.githubTrigger", "parameters": {}},
            {"name": "Every hour", "type": "n8n-nodes-base.scheduleTrigger", "parameters": {}},
        ],
        "connections": {},
    }


def test_a_trigger_type_without_a_fake_names_node_type_and_fix() -> None:
    with pytest.raises(ConfigError) as caught:
        webhook_node(unserved_workflow(), "wf.json")
    message = str(caught.value)
    assert "'On push'" in message
    assert "n8n-nodes-base.githubTrigger" in message
    assert "fake_providers/payment/triggers/" in message
    assert "\n" not in message


def test_the_cli_refuses_it_with_one_error_line_and_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "flows" / "stripe_trigger_naive"
    shutil.copytree(BUNDLED / "stripe_trigger_naive", folder)
    text = (folder / "workflow.json").read_text()
    (folder / "workflow.json").write_text(text.replace("stripeTrigger", "githubTrigger"))
    result = subprocess.run(
        [sys.executable, "-m", "harness", "list", "--workflows", str(tmp_path / "flows")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert "n8n-nodes-base.githubTrigger" in lines[0] and "'Stripe Trigger'" in lines[0]


def test_the_bundled_stripe_trigger_workflows_are_sent_by_the_stripe_fake() -> None:
    for name in ("stripe_trigger_naive", "stripe_trigger_dedup"):
        wut = load_manifest(BUNDLED / name)
        assert isinstance(wut.service_trigger, StripeTrigger)
        assert wut.path.endswith("/webhook")
