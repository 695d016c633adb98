"""Semantics of the public API, in-process (httpx.ASGITransport) with a controllable clock."""

from __future__ import annotations

import asyncio
import json

import pytest

from .conftest import InProcessProvider, charge_body

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


async def test_first_request_commits_and_retry_replays_byte_for_byte(
    inproc: InProcessProvider,
) -> None:
    first = await inproc.charge("k1", "order-1")
    again = await inproc.charge('"k1"', "order-1")  # the quoted form names the same key
    assert first.status_code == 200
    assert "idempotent-replayed" not in first.headers
    assert first.json()["status"] == "succeeded"
    assert again.status_code == 200
    assert again.headers["idempotent-replayed"] == "true"
    assert again.content == first.content
    assert len(await inproc.commits(reference="order-1")) == 1


async def test_reformatted_json_is_the_same_payload(inproc: InProcessProvider) -> None:
    first = await inproc.charge("k1", "order-1")
    spaced = json.dumps(charge_body("order-1"), indent=4).encode()
    again = await inproc.public.post(
        "/v1/charges",
        content=spaced,
        headers={"Idempotency-Key": "k1", "content-type": "application/json"},
    )
    assert again.headers["idempotent-replayed"] == "true"
    assert again.content == first.content


async def test_same_key_other_payload_is_422_and_commits_nothing(
    inproc: InProcessProvider,
) -> None:
    await inproc.charge("k1", "order-1")
    response = await inproc.charge("k1", "order-1", amount=999)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith("/idempotency-key-mismatch")
    assert len(await inproc.commits()) == 1


async def test_key_past_ttl_commits_again(inproc: InProcessProvider) -> None:
    ttl = inproc.config.key_ttl_seconds
    await inproc.charge("k1", "order-1")
    inproc.clock.advance(ttl - 1)
    assert (await inproc.charge("k1", "order-1")).headers.get("idempotent-replayed") == "true"
    inproc.clock.advance(1)
    late = await inproc.charge("k1", "order-1")
    assert "idempotent-replayed" not in late.headers
    commits = await inproc.commits(reference="order-1")
    assert len(commits) == 2
    assert [c["attempt_no"] for c in commits] == [1, 3]


async def test_ttl_set_through_control_api_applies_to_stored_keys(
    inproc: InProcessProvider,
) -> None:
    await inproc.charge("k1", "order-1")
    response = await inproc.control.put("/_control/ttl", json={"seconds": 0})
    assert response.json() == {"seconds": 0}
    await inproc.charge("k1", "order-1")
    assert len(await inproc.commits()) == 2


async def test_missing_key_is_400_unless_lenient(inproc: InProcessProvider) -> None:
    response = await inproc.charge(None, "order-1")
    assert response.status_code == 400
    assert response.json()["type"].endswith("/idempotency-key-missing")
    assert await inproc.commits() == []


@pytest.mark.parametrize("inproc", [{"lenient": True}], indirect=True)
async def test_lenient_provider_commits_every_keyless_request(inproc: InProcessProvider) -> None:
    for _ in range(3):
        assert (await inproc.charge(None, "order-1")).status_code == 200
    commits = await inproc.commits(reference="order-1")
    assert [c["attempt_no"] for c in commits] == [1, 2, 3]


async def test_emails_are_not_idempotent(inproc: InProcessProvider) -> None:
    email = {"to": "a@example.com", "subject": "Receipt", "reference": "order-1"}
    ids = set()
    for _ in range(3):
        response = await inproc.public.post(
            "/v1/emails", json=email, headers={"Idempotency-Key": "ignored"}
        )
        assert response.status_code == 200
        ids.add(response.json()["id"])
    commits = await inproc.commits(reference="order-1")
    assert len(ids) == 3
    assert [c["effect"] for c in commits] == ["email"] * 3
    assert all(c["idempotency_key"] is None for c in commits)


async def test_declined_charge_is_stored_and_replayed_without_commit(
    inproc: InProcessProvider,
) -> None:
    first = await inproc.charge("k1", "order-1", source="tok_chargeDeclined")
    again = await inproc.charge("k1", "order-1", source="tok_chargeDeclined")
    assert first.status_code == again.status_code == 402
    assert again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    assert await inproc.commits() == []
    found = await inproc.public.get("/v1/charges", params={"reference": "order-1"})
    assert [c["status"] for c in found.json()["data"]] == ["failed"]


async def test_reconciliation_queries(inproc: InProcessProvider) -> None:
    charge = (await inproc.charge("k1", "order-1")).json()
    by_key = await inproc.public.get("/v1/charges", params={"idempotency_key": "k1"})
    by_reference = await inproc.public.get("/v1/charges", params={"reference": "order-1"})
    by_id = await inproc.public.get(f"/v1/charges/{charge['id']}")
    missing = await inproc.public.get("/v1/charges/ch_nope")
    assert by_key.json()["data"] == [charge]
    assert by_reference.json()["data"] == [charge]
    assert by_id.json() == charge
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    empty = await inproc.public.get("/v1/charges", params={"reference": "order-2"})
    assert empty.json()["data"] == []


BAD_BODIES = [
    pytest.param(b"{not json", "application/json", 400, id="malformed-json"),
    pytest.param(b'{"amount": 1', "application/json", 400, id="truncated-json"),
    pytest.param(b"[1, 2]", "application/json", 400, id="not-an-object"),
    pytest.param(
        b'{"amount": "12", "currency": "eur", "reference": "r"}',
        "application/json",
        400,
        id="amount-as-string",
    ),
    pytest.param(
        b'{"amount": 12.5, "currency": "eur", "reference": "r"}',
        "application/json",
        400,
        id="amount-as-float",
    ),
    pytest.param(
        b'{"amount": true, "currency": "eur", "reference": "r"}',
        "application/json",
        400,
        id="amount-as-bool",
    ),
    pytest.param(
        b'{"amount": 0, "currency": "eur", "reference": "r"}',
        "application/json",
        400,
        id="zero-amount",
    ),
    pytest.param(
        b'{"amount": -5, "currency": "eur", "reference": "r"}',
        "application/json",
        400,
        id="negative-amount",
    ),
    pytest.param(
        b'{"amount": 100000000000, "currency": "eur", "reference": "r"}',
        "application/json",
        400,
        id="absurd-amount",
    ),
    pytest.param(
        b'{"amount": ' + b"9" * 5000 + b', "currency": "eur", "reference": "r"}',
        "application/json",
        400,
        id="amount-beyond-int-parsing",
    ),
    pytest.param(
        b'{"amount": NaN, "currency": "eur", "reference": "r"}', "application/json", 400, id="nan"
    ),
    pytest.param(
        b'{"amount": 5, "currency": "euro", "reference": "r"}',
        "application/json",
        400,
        id="bad-currency",
    ),
    pytest.param(
        b'{"amount": 5, "currency": "eur", "reference": ""}',
        "application/json",
        400,
        id="empty-reference",
    ),
    pytest.param(
        b'{"amount": 5, "currency": "eur"}', "application/json", 400, id="missing-reference"
    ),
    pytest.param(
        b'{"amount": 5, "currency": "eur", "reference": "r", "x": 1}',
        "application/json",
        400,
        id="unknown-field",
    ),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, "application/json", 413, id="oversized"),
    pytest.param(b"[" * 30_000 + b"]" * 30_000, "application/json", 400, id="deeply-nested"),
    pytest.param(b"\xff\xfe", "application/json", 400, id="not-utf8"),
    pytest.param(b"amount=5", "application/x-www-form-urlencoded", 415, id="form-encoded"),
]


@pytest.mark.parametrize(("body", "content_type", "status"), BAD_BODIES)
async def test_bad_input_is_a_problem_document_and_never_commits(
    inproc: InProcessProvider, body: bytes, content_type: str, status: int
) -> None:
    response = await inproc.public.post(
        "/v1/charges",
        content=body,
        headers={"Idempotency-Key": "k-bad", "content-type": content_type},
    )
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == status
    assert await inproc.commits() == []
    # A rejected request claims nothing: the key is still free for a good request.
    assert (await inproc.charge("k-bad", "order-1")).status_code == 200


@pytest.mark.parametrize("key", ["", "two words", "x" * 256, '"open', "caf\u00e9"])
async def test_bad_key_format_is_400(inproc: InProcessProvider, key: str) -> None:
    response = await inproc.public.post(
        "/v1/charges",
        json=charge_body("order-1"),
        headers=[(b"idempotency-key", key.encode("utf-8"))],
    )
    assert response.status_code == 400
    assert response.json()["type"].endswith("/invalid-idempotency-key")
    attempts = (await inproc.control.get("/_control/attempts")).json()
    assert [a["outcome"] for a in attempts] == ["rejected_4xx"]
    assert await inproc.commits() == []


async def test_unknown_route_and_method_are_problem_documents(inproc: InProcessProvider) -> None:
    not_found = await inproc.public.get("/v1/refunds")
    wrong_method = await inproc.public.delete("/v1/charges")
    assert (not_found.status_code, wrong_method.status_code) == (404, 405)
    for response in (not_found, wrong_method):
        assert response.headers["content-type"] == "application/problem+json"


async def test_fifty_concurrent_identical_requests_commit_once(inproc: InProcessProvider) -> None:
    responses = await asyncio.gather(*(inproc.charge("k-race", "order-race") for _ in range(50)))
    statuses = sorted({r.status_code for r in responses})
    bodies = {r.content for r in responses if r.status_code == 200}
    assert set(statuses) <= {200, 409}
    assert len(bodies) == 1
    assert len(await inproc.commits(reference="order-race")) == 1


async def test_control_api_rejects_bad_specs_as_problems(inproc: InProcessProvider) -> None:
    bad_fault = await inproc.control.post("/_control/faults", json={"kind": "explode"})
    no_target = await inproc.control.post("/_control/barriers", json={"point": "received"})
    bad_ttl = await inproc.control.put("/_control/ttl", json={"seconds": -1})
    for response in (bad_fault, no_target, bad_ttl):
        assert response.status_code == 400
        assert response.headers["content-type"] == "application/problem+json"
