"""A workflow n8n refuses to publish (a node it finds unfinished) fails its own cases with
n8n's words and the fix, once per stack: its later cases do not try again."""

from __future__ import annotations

from typing import Any, cast

import pytest

from harness.errors import SetupError
from harness.front.plugin import ChaosDeployments
from harness.stack.stack import Stack
from harness.workflow.manifest import BUNDLED_WORKFLOWS, discover

REFUSAL = (
    'n8n refused to publish workflow w1: HTTP 400 {"message":"Cannot publish workflow: 1 node'
    ' have configuration issues: Node \\"Create\\": Missing or invalid required parameters: id"}'
)


def test_a_refused_workflow_names_the_node_and_the_fix_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tries: list[str] = []

    def refuse(stack: Any, workflow: Any) -> Any:
        tries.append(workflow.name)
        raise SetupError(REFUSAL)

    monkeypatch.setattr("harness.workflow.deployment.deploy_under_test", refuse)
    [naive] = [w for w in discover(BUNDLED_WORKFLOWS) if w.name == "payment_naive"]
    deployments = ChaosDeployments(cast(Stack, object()), [naive])
    for _ in range(2):
        with pytest.raises(SetupError) as refused:
            deployments["payment_naive"]
        message = str(refused.value)
        assert "could not be deployed: n8n refused to publish workflow w1" in message
        assert "Missing or invalid required parameters: id" in message
        assert "n8n would refuse it in production too" in message
        assert "resource or operation was never chosen" in message
    assert tries == ["payment_naive"]
