"""The Upstream config: JSON round trip, errors at construction, the control API's PUT/GET."""

from __future__ import annotations

import pytest

from fake_providers.upstreams import (
    ReferenceSource,
    Route,
    RouteTemplate,
    Upstream,
    UpstreamConfigError,
    upstreams_from_json,
    upstreams_to_json,
)

from .conftest import InProcessProvider

FULL = Upstream(
    host="API.Notion.com",
    fake="record",
    reference=ReferenceSource("json", "/properties/order"),
    effects=(Route("post", "/v1/pages*"),),
    reads=(Route("POST", "/v1/databases/*/query"),),
    templates=(RouteTemplate(Route("POST", "/v1/pages"), 201, '{"id": "{{id}}"}'),),
    idempotency_header="X-Request-Id",
    effect="page",
)


def test_round_trip_and_normalisation() -> None:
    assert FULL.host == "api.notion.com"
    assert FULL.effects[0].method == "POST"
    assert upstreams_from_json(upstreams_to_json([FULL])) == [FULL]
    assert Upstream.from_json({"host": "api.stripe.com", "fake": "stripe"}).effects == ()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Upstream(host="x.com", fake="soap"), "fake 'soap' is unknown"),
        (lambda: ReferenceSource("cookie", "a"), "reference kind 'cookie'"),
        (lambda: ReferenceSource("json", "order/id"), "must start with '/'"),
        (lambda: ReferenceSource("path", "(unclosed"), "regex"),
        (lambda: RouteTemplate(Route("POST", "/x"), 200, '{"id": {{id}}}'), "not valid JSON"),
        (lambda: Upstream(host="https://x.com/", fake="record"), "bare host name"),
    ],
)
def test_bad_config_fails_at_construction(build: object, message: str) -> None:
    with pytest.raises(UpstreamConfigError, match=message):
        build()  # type: ignore[operator]


def test_same_host_twice_is_an_error() -> None:
    doc = {"host": "a.com", "fake": "record"}
    with pytest.raises(UpstreamConfigError, match="configured twice"):
        upstreams_from_json([doc, doc])


def test_route_glob_and_method() -> None:
    route = Route("POST", "/v1/payment_intents*")
    assert route.matches("post", "/v1/payment_intents/pi_1/confirm")
    assert not route.matches("GET", "/v1/payment_intents")
    assert Route().matches("DELETE", "/anything")


@pytest.mark.asyncio
async def test_control_api_sets_and_reads_upstreams(inproc: InProcessProvider) -> None:
    put = await inproc.control.put("/_control/upstreams", json=upstreams_to_json([FULL]))
    assert put.status_code == 200
    got = await inproc.control.get("/control/upstreams")
    assert upstreams_from_json(got.json()) == [FULL]
    await inproc.control.post("/_control/reset")
    kept = await inproc.control.get("/_control/upstreams")
    assert upstreams_from_json(kept.json()) == [FULL]


@pytest.mark.asyncio
async def test_control_api_rejects_a_bad_upstream_with_its_reason(
    inproc: InProcessProvider,
) -> None:
    bad = [{"host": "x.com", "fake": "record", "templates": [{"route": {}, "body": "{"}]}]
    answer = await inproc.control.put("/_control/upstreams", json=bad)
    assert answer.status_code == 400
    assert "not valid JSON" in answer.json()["detail"]
