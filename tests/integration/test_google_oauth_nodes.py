"""Exports with n8n's Gmail and Google Sheets nodes, unmodified, run under the harness: their
OAuth2 credentials are created connected (a token in ``oauthTokenData``), the node's request
goes through the intercepting proxy to the record fake and is a commit with the business key,
and a token refresh (n8n's answer to a 401) is answered by the token fake, inside the stack.
The generic OAuth2 credential (oAuth2Api, client-credentials grant; PayPal's export) gets
its token from the token fake the same way, before its first request."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from harness.stack.stack import Stack
from harness.workflow.credential_fill import GENERIC_TOKEN_HOST
from harness.workflow.upstream_config import TOKEN_PATH
from tests.support.exports import deployed, trigger

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("name", "host", "path_start"),
    [
        ("gmail_receipt", "www.googleapis.com", "/gmail/v1/users/me/messages/send"),
        ("sheets_order_row", "sheets.googleapis.com", "/v4/spreadsheets/"),
    ],
)
def test_the_nodes_request_is_a_commit_at_the_fake(
    n8n_stack: Stack, name: str, host: str, path_start: str
) -> None:
    wut, deployment = deployed(n8n_stack, name)
    key = f"it-{name}-{uuid.uuid4().hex[:8]}"
    assert n8n_stack.intercept is not None
    seen = len(n8n_stack.intercept.journal())
    response = trigger(wut, deployment, key)
    assert response.status_code == 200, response.text
    commits = n8n_stack.require_provider().control.commits(reference=key)
    assert len(commits) == 1, commits  # one message sent, one row appended
    calls = [e for e in n8n_stack.intercept.journal()[seen:] if e.host == host]
    assert calls and all(e.outcome == "forwarded" and e.status == 200 for e in calls), calls
    assert any(e.path.startswith(path_start) and e.method in ("POST", "PUT") for e in calls)


def test_a_401_makes_n8n_refresh_at_the_token_fake(n8n_stack: Stack) -> None:
    """The send route answers 401: n8n refreshes the token (POST oauth2.googleapis.com/token,
    a read of the token fake) and retries once; the retry's 401 fails the node."""
    wut, deployment = deployed(n8n_stack, "gmail_receipt")
    configs = wut.upstream_configs()
    gmail = next(u for u in configs if u.host == "www.googleapis.com")
    unauthorized = tuple(dataclasses.replace(t, status=401) for t in gmail.templates)
    control = n8n_stack.require_provider().control
    control.set_upstreams(
        [dataclasses.replace(gmail, templates=unauthorized) if u is gmail else u for u in configs]
    )
    assert n8n_stack.intercept is not None
    seen = len(n8n_stack.intercept.journal())
    key = f"it-refresh-{uuid.uuid4().hex[:8]}"
    response = trigger(wut, deployment, key)
    assert response.status_code == 500, response.text
    journal = n8n_stack.intercept.journal()[seen:]
    refreshes = [e for e in journal if e.host == "oauth2.googleapis.com"]
    assert [(e.method, e.path, e.outcome, e.status) for e in refreshes] == [
        ("POST", TOKEN_PATH, "forwarded", 200)
    ]
    sends = [e for e in journal if e.host == "www.googleapis.com"]
    assert [e.status for e in sends] == [401, 401]  # the first token, then the refreshed one


def test_a_generic_oauth2_credential_fetches_its_token_at_the_token_fake(n8n_stack: Stack) -> None:
    wut, deployment = deployed(n8n_stack, "paypal_order")
    key = f"it-paypal-{uuid.uuid4().hex[:8]}"
    assert n8n_stack.intercept is not None
    seen = len(n8n_stack.intercept.journal())
    response = trigger(wut, deployment, key)
    assert response.status_code == 200, response.text
    commits = n8n_stack.require_provider().control.commits(reference=key)
    assert [c.effect for c in commits] == ["record"], commits
    journal = [
        (e.host, e.method, e.path, e.outcome, e.status)
        for e in n8n_stack.intercept.journal()[seen:]
    ]
    assert journal == [
        (GENERIC_TOKEN_HOST, "POST", TOKEN_PATH, "forwarded", 200),
        ("api-m.sandbox.paypal.com", "POST", "/v2/checkout/orders", "forwarded", 201),
    ], journal
