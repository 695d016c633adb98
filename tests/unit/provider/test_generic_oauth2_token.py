"""The generic OAuth2 credential (oAuth2Api, client-credentials grant; PayPal's export): n8n
fetches its token before the first request from the token fake of the harness's token host,
a read that commits nothing, and the API call after it is the commit (in-process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.workflow.credential_fill import GENERIC_TOKEN_HOST
from harness.workflow.manifest import load_manifest
from harness.workflow.upstream_config import REFRESHED_TOKEN

from .conftest import InProcessProvider
from .upstream_helpers import configure

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

EXPORTS = Path(__file__).parents[1] / "fixtures" / "exports"


async def test_the_token_is_answered_without_a_commit_and_the_call_commits(
    inproc: InProcessProvider,
) -> None:
    configs = load_manifest(EXPORTS / "paypal_order").upstream_configs()
    assert {u.host for u in configs} == {"api-m.sandbox.paypal.com", GENERIC_TOKEN_HOST}
    await configure(inproc, *configs)
    token = await inproc.public.post(
        "/token",
        headers={"Host": GENERIC_TOKEN_HOST},
        content="grant_type=client_credentials",
    )
    assert token.status_code == 200
    assert token.json()["access_token"] == REFRESHED_TOKEN["access_token"]
    assert await inproc.commits() == []
    order = {"intent": "CAPTURE", "purchase_units": [{"reference_id": "ord-7"}]}
    created = await inproc.public.post(
        "/v2/checkout/orders", headers={"Host": "api-m.sandbox.paypal.com"}, json=order
    )
    assert created.status_code == 201
    assert [c["reference"] for c in await inproc.commits()] == ["ord-7"]
