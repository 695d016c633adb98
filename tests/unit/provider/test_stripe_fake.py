"""The stripe fake, in-process: routing by Host, form bodies, auth, objects, idempotency."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from fake_providers.payment.fakes.stripe_search import INDEX_LAG_S
from fake_providers.upstreams import ReferenceSource, Route, Upstream

from .conftest import InProcessProvider, charge_body
from .upstream_helpers import STRIPE_AUTH, configure, stripe_get, stripe_post

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

STRIPE = Upstream("api.stripe.com", "stripe", ReferenceSource("form", "metadata[order_id]"))
INTENT = {"amount": "2000", "currency": "EUR", "metadata[order_id]": "A-1"}


async def test_bracket_keys_nest_and_the_intent_is_a_commit(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    form = [
        *INTENT.items(),
        ("metadata[customer][tier]", "gold"),
        ("payment_method_types[]", "card"),
        ("payment_method_types[]", "sepa_debit"),
    ]
    answer = await stripe_post(inproc, "/v1/payment_intents", form)
    assert answer.status_code == 200, answer.text
    intent = answer.json()
    assert intent["id"].startswith("pi_")
    assert intent["object"] == "payment_intent"
    assert intent["amount"] == 2000
    assert intent["currency"] == "eur"
    assert intent["metadata"] == {"order_id": "A-1", "customer": {"tier": "gold"}}
    assert intent["payment_method_types"] == ["card", "sepa_debit"]
    assert intent["status"] == "requires_payment_method"
    [commit] = await inproc.commits(reference="A-1")
    assert commit["effect"] == "payment_intent"
    assert commit["effect_id"] == intent["id"]


async def test_line_items_become_a_list_and_links_have_a_url(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    product = await stripe_post(
        inproc,
        "/v1/products",
        {
            "name": "Course",
            "default_price_data[unit_amount]": "4900",
            "default_price_data[currency]": "USD",
        },
    )
    price_id = product.json()["default_price"]
    assert price_id.startswith("price_")
    price = (await stripe_get(inproc, f"/v1/prices/{price_id}")).json()
    assert (price["unit_amount"], price["currency"]) == (4900, "usd")
    link = await stripe_post(
        inproc,
        "/v1/payment_links",
        {"line_items[0][price]": price_id, "line_items[0][quantity]": "1"},
    )
    assert link.status_code == 200, link.text
    assert link.json()["url"].startswith("https://buy.stripe.com/")
    assert link.json()["line_items"] == [{"price": price_id, "quantity": "1"}]
    effects = sorted(c["effect"] for c in await inproc.commits())
    assert effects == ["payment_link", "product"]


async def test_loopback_and_unconfigured_hosts_keep_the_bundled_api(
    inproc: InProcessProvider,
) -> None:
    await configure(inproc, STRIPE)
    for host in ("127.0.0.1:8080", "localhost", "provider"):
        answer = await inproc.public.post(
            "/v1/charges",
            json=charge_body(f"ref-{host}"),
            headers={"Idempotency-Key": f"k-{host}", "Host": host},
        )
        assert answer.status_code == 200
        assert "reference" in answer.json()
    stripe_shaped = await stripe_post(inproc, "/v1/charges", {"amount": "5", "currency": "eur"})
    assert "reference" not in stripe_shaped.json()
    assert stripe_shaped.json()["paid"] is True


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "api_key_missing"),
        ({"Authorization": "Bearer sk_live_abcdefghijklmnop"}, "api_key_invalid"),
        ({"Authorization": "Token sk_test_abc"}, "api_key_invalid"),
    ],
)
async def test_auth_needs_a_test_key(
    inproc: InProcessProvider, headers: dict[str, str], code: str
) -> None:
    await configure(inproc, STRIPE)
    answer = await inproc.public.post(
        "/v1/customers", data={"name": "x"}, headers={"Host": "api.stripe.com", **headers}
    )
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == code
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert await inproc.commits() == []


async def test_basic_auth_with_the_key_as_user_is_accepted(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    answer = await inproc.public.post(
        "/v1/customers",
        data={"name": "x"},
        headers={"Host": "api.stripe.com"},
        auth=(STRIPE_AUTH["Authorization"].split()[1], ""),
    )
    assert answer.status_code == 200


async def test_errors_have_stripes_shape(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    missing = await stripe_post(inproc, "/v1/payment_intents", {"currency": "eur"})
    assert missing.status_code == 400
    assert missing.json() == {
        "error": {
            "type": "invalid_request_error",
            "code": "parameter_missing",
            "message": "Missing required param: amount.",
            "param": "amount",
        }
    }
    absent = await stripe_get(inproc, "/v1/customers/cus_nope")
    assert absent.status_code == 404
    assert absent.json()["error"]["code"] == "resource_missing"
    unknown = await stripe_post(inproc, "/v1/invoices", {})
    assert unknown.status_code == 404
    assert "Unrecognized request URL" in unknown.json()["error"]["message"]
    assert await inproc.commits() == []


async def test_retrieve_list_and_search(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    for name, order in (("Ada", "A-1"), ("Bob", "B-2"), ("Ada Lovelace", "A-3")):
        answer = await stripe_post(
            inproc,
            "/v1/customers",
            {"name": name, "email": f"{order}@x.test", "metadata[order_id]": order},
        )
        assert answer.status_code == 200
    listed = (await stripe_get(inproc, "/v1/customers", {"limit": "2"})).json()
    assert listed["object"] == "list"
    assert [c["name"] for c in listed["data"]] == ["Ada Lovelace", "Bob"]
    assert listed["has_more"] is True

    async def search(query: str) -> list[str]:
        answer = await stripe_get(inproc, "/v1/customers/search", {"query": query})
        assert answer.status_code == 200, answer.text
        assert answer.json()["object"] == "search_result"
        return sorted(c["metadata"]["order_id"] for c in answer.json()["data"])

    assert await search("metadata['order_id']:'B-2'") == []  # searchable in under a minute
    inproc.clock.advance(INDEX_LAG_S)
    assert await search("metadata['order_id']:'B-2'") == ["B-2"]
    assert await search("name:'ada'") == ["A-1"]
    assert await search("name~'Ada'") == ["A-1", "A-3"]
    assert await search("email:'A-3@x.test'") == ["A-3"]
    assert await search("name:'Bob' OR metadata['order_id']:'A-1'") == ["A-1", "B-2"]
    assert await search("name~'Ada' AND -metadata['order_id']:'A-1'") == ["A-3"]
    assert await search("metadata['order_id']:'none'") == []
    bad = await stripe_get(inproc, "/v1/customers/search", {"query": "name = 'x'"})
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_request_error"
    one = listed["data"][0]
    assert (await stripe_get(inproc, f"/v1/customers/{one['id']}")).json() == one


async def test_confirm_is_its_own_commit(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    intent = (await stripe_post(inproc, "/v1/payment_intents", INTENT)).json()
    confirmed = await stripe_post(
        inproc, f"/v1/payment_intents/{intent['id']}/confirm", {"payment_method": "pm_card_visa"}
    )
    assert confirmed.json()["status"] == "succeeded"
    assert confirmed.json()["amount_received"] == 2000
    again = await stripe_post(inproc, f"/v1/payment_intents/{intent['id']}/confirm", {})
    assert again.status_code == 400
    assert again.json()["error"]["code"] == "payment_intent_unexpected_state"
    effects = [c["effect"] for c in await inproc.commits(reference="")]
    assert effects == ["payment_intent_confirm"]  # the confirm form carries no order id
    assert [c["effect"] for c in await inproc.commits(reference="A-1")] == ["payment_intent"]


async def test_refund_defaults_to_the_charge_amount(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    charge = (await stripe_post(inproc, "/v1/charges", {"amount": "700", "currency": "eur"})).json()
    refund = await stripe_post(inproc, "/v1/refunds", {"charge": charge["id"]})
    assert refund.json()["amount"] == 700
    assert refund.json()["id"].startswith("re_")
    missing = await stripe_post(inproc, "/v1/refunds", {"charge": "ch_nope"})
    assert missing.status_code == 404
    assert missing.json()["error"]["param"] == "charge"


async def test_a_charge_remembers_its_refunds(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    charge = (await stripe_post(inproc, "/v1/charges", {"amount": "700", "currency": "eur"})).json()
    part = await stripe_post(inproc, "/v1/refunds", {"charge": charge["id"], "amount": "200"})
    assert (part.status_code, part.json()["amount"]) == (200, 200)
    too_much = await stripe_post(inproc, "/v1/refunds", {"charge": charge["id"], "amount": "600"})
    assert too_much.status_code == 400, too_much.text
    assert too_much.json()["error"]["param"] == "amount"
    rest = await stripe_post(inproc, "/v1/refunds", {"charge": charge["id"]})
    assert rest.json()["amount"] == 500  # what was left, not the charge's amount
    again = await stripe_post(inproc, "/v1/refunds", {"charge": charge["id"]})
    assert again.status_code == 400
    assert again.json()["error"]["code"] == "charge_already_refunded"
    stored = (await stripe_get(inproc, f"/v1/charges/{charge['id']}")).json()
    assert (stored["amount_refunded"], stored["refunded"]) == (700, True)
    assert [c["effect"] for c in await inproc.commits()] == ["charge", "refund", "refund"]


async def test_an_intent_is_refunded_through_its_charge(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    intent = (await stripe_post(inproc, "/v1/payment_intents", INTENT)).json()
    unpaid = await stripe_post(inproc, "/v1/refunds", {"payment_intent": intent["id"]})
    assert unpaid.status_code == 400
    assert unpaid.json()["error"]["param"] == "payment_intent"
    await stripe_post(inproc, f"/v1/payment_intents/{intent['id']}/confirm", {})
    refund = await stripe_post(inproc, "/v1/refunds", {"payment_intent": intent["id"]})
    assert refund.json()["amount"] == 2000
    again = await stripe_post(inproc, "/v1/refunds", {"payment_intent": intent["id"]})
    assert again.json()["error"]["code"] == "charge_already_refunded"


async def test_two_refunds_at_once_refund_a_charge_once(inproc: InProcessProvider) -> None:
    """The first is held after it was checked against its charge; the second refunds the whole
    charge meanwhile; released, the first finds the charge refunded, as in Stripe."""
    await configure(inproc, STRIPE)
    charge = (await stripe_post(inproc, "/v1/charges", {"amount": "700", "currency": "eur"})).json()
    refund = {"charge": charge["id"]}
    barrier_id, _ = await hold(inproc, "refund-1", "received", "/v1/refunds", refund)
    second = await stripe_post(inproc, "/v1/refunds", refund, key="refund-2")
    assert second.status_code == 200
    await inproc.control.post(f"/_control/barriers/{barrier_id}/release")
    first = await HELD.pop("refund-1")
    assert first.status_code == 400, first.text
    assert first.json()["error"]["code"] == "charge_already_refunded"
    assert [c["effect"] for c in await inproc.commits()] == ["charge", "refund"]
    attempts = (await inproc.control.get("/_control/attempts", params={"key": "refund-1"})).json()
    assert [(a["outcome"], a["http_status"]) for a in attempts] == [("rejected_4xx", 400)]
    said = f"charge_already_refunded: Charge {charge['id']} has already been refunded."
    assert attempts[0]["detail"] == said


async def test_a_refused_refund_reaches_no_commit_point(inproc: InProcessProvider) -> None:
    """A refund refused as it settles committed nothing: a barrier at 'committed' for its key
    is not reached (no crash point may claim a hold of a commit that never was)."""
    await configure(inproc, STRIPE)
    charge = (await stripe_post(inproc, "/v1/charges", {"amount": "700", "currency": "eur"})).json()
    await stripe_post(inproc, "/v1/refunds", {"charge": charge["id"]})
    armed = await inproc.control.post(
        "/_control/barriers", json={"key": "again", "point": "committed", "hold_timeout_s": 5}
    )
    again = await stripe_post(inproc, "/v1/refunds", {"charge": charge["id"]}, key="again")
    assert again.status_code == 400  # answered at once, not held
    info = (await inproc.control.get(f"/_control/barriers/{armed.json()['id']}")).json()
    assert info["state"] == "armed", info


async def test_two_confirms_at_once_charge_once(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    intent = (await stripe_post(inproc, "/v1/payment_intents", INTENT)).json()
    confirm = f"/v1/payment_intents/{intent['id']}/confirm"
    barrier_id, _ = await hold(inproc, "confirm-1", "received", confirm, {})
    assert (await stripe_post(inproc, confirm, {}, key="confirm-2")).status_code == 200
    await inproc.control.post(f"/_control/barriers/{barrier_id}/release")
    first = await HELD.pop("confirm-1")
    assert first.json()["error"]["code"] == "payment_intent_unexpected_state"
    effects = [c["effect"] for c in await inproc.commits()]
    assert effects == ["payment_intent", "payment_intent_confirm"]


async def test_a_seeded_charge_is_set_up_not_an_effect(inproc: InProcessProvider) -> None:
    """A seed (the charge a refund workflow refunds) keeps its given id, commits nothing and
    meets no fault; the workflow's refund of it is the effect."""
    await configure(inproc, STRIPE)
    await inproc.control.post("/_control/faults", json={"kind": "error_before_commit"})
    seed = {"id": "ch_A-1", "amount": "900", "currency": "eur", "metadata[order_id]": "A-1"}
    answer = await inproc.control.post(
        "/_control/seed",
        json={"host": "api.stripe.com", "path": "/v1/charges", "body": seed},
    )
    assert answer.json()["status"] == 200, answer.text
    assert answer.json()["body"]["id"] == "ch_A-1"
    assert await inproc.commits() == []
    # logged as set-up, and in Stripe's search at once (made long before the event)
    [logged] = (await inproc.control.get("/_control/attempts")).json()
    assert logged["outcome"] == "seeded"
    query = {"query": "metadata['order_id']:'A-1'"}
    found = (await stripe_get(inproc, "/v1/charges/search", params=query)).json()
    assert [c["id"] for c in found["data"]] == ["ch_A-1"]
    faulted = await stripe_post(inproc, "/v1/refunds", {"charge": "ch_A-1"})
    assert faulted.status_code == 500  # the fault waited for the workflow's request
    refund = await stripe_post(inproc, "/v1/refunds", {"charge": "ch_A-1"})
    assert (refund.status_code, refund.json()["amount"]) == (200, 900)
    assert [c["effect"] for c in await inproc.commits()] == ["refund"]
    elsewhere = await inproc.control.post(
        "/_control/seed", json={"host": "api.example.com", "path": "/v1/charges", "body": {}}
    )
    assert elsewhere.status_code == 400
    assert "api.stripe.com" in elsewhere.json()["detail"]


async def test_replay_returns_the_first_result(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    first = await stripe_post(inproc, "/v1/payment_intents", INTENT, key="idem-1")
    reordered = dict(reversed(list(INTENT.items())))
    again = await stripe_post(inproc, "/v1/payment_intents", reordered, key="idem-1")
    assert again.status_code == first.status_code == 200
    assert again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    assert len(await inproc.commits(reference="A-1")) == 1


async def test_errors_are_replayed_too(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    await inproc.control.post("/_control/faults", json={"kind": "commit_then_error"})
    first = await stripe_post(inproc, "/v1/payment_intents", INTENT, key="idem-e")
    assert first.status_code == 500
    assert first.json()["error"]["type"] == "api_error"
    again = await stripe_post(inproc, "/v1/payment_intents", INTENT, key="idem-e")
    assert (again.status_code, again.content) == (500, first.content)
    assert len(await inproc.commits(reference="A-1")) == 1


async def test_same_key_other_parameters_is_an_idempotency_error(
    inproc: InProcessProvider,
) -> None:
    await configure(inproc, STRIPE)
    await stripe_post(inproc, "/v1/payment_intents", INTENT, key="idem-2")
    other = await stripe_post(
        inproc, "/v1/payment_intents", {**INTENT, "amount": "2001"}, key="idem-2"
    )
    assert other.status_code == 400
    assert other.json()["error"]["type"] == "idempotency_error"
    elsewhere = await stripe_post(inproc, "/v1/customers", {"name": "x"}, key="idem-2")
    assert elsewhere.status_code == 400
    assert len(await inproc.commits()) == 1
    # The attempt log says what the sender got: Stripe's 400, not the IETF draft's 422.
    attempts = (await inproc.control.get("/_control/attempts", params={"key": "idem-2"})).json()
    assert [(a["outcome"], a["http_status"]) for a in attempts[1:]] == [("mismatch", 400)] * 2


async def hold(
    inproc: InProcessProvider,
    key: str,
    point: str,
    path: str = "/v1/payment_intents",
    body: dict[str, str] = INTENT,
) -> tuple[str, dict[str, Any]]:
    """Arm a barrier, send the request (the intent), wait until it is held; (barrier id,
    barrier info)."""
    armed = await inproc.control.post(
        "/_control/barriers", json={"key": key, "point": point, "hold_timeout_s": 10}
    )
    barrier_id = armed.json()["id"]
    HELD[key] = asyncio.create_task(stripe_post(inproc, path, body, key=key))
    reached = await inproc.control.post(
        f"/_control/barriers/{barrier_id}/wait", params={"timeout": 5}
    )
    assert reached.json()["state"] == "holding"
    return barrier_id, reached.json()


HELD: dict[str, asyncio.Task[httpx.Response]] = {}


async def test_key_in_flight_is_409(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    barrier_id, _ = await hold(inproc, "idem-3", "received")
    concurrent = await stripe_post(inproc, "/v1/payment_intents", INTENT, key="idem-3")
    assert concurrent.status_code == 409
    assert concurrent.json()["error"]["code"] == "idempotency_key_in_use"
    assert await inproc.commits() == []
    await inproc.control.post(f"/_control/barriers/{barrier_id}/release")
    assert (await HELD.pop("idem-3")).status_code == 200
    assert len(await inproc.commits(reference="A-1")) == 1


async def test_barrier_holds_a_stripe_effect_at_committed(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    barrier_id, info = await hold(inproc, "idem-5", "committed")
    assert info["reached_reference"] == "A-1"
    [commit] = await inproc.commits(reference="A-1")  # committed, the answer not yet sent
    assert commit["effect_id"] == info["effect_id"]
    assert not HELD["idem-5"].done()
    await inproc.control.post(f"/_control/barriers/{barrier_id}/release")
    answer = await HELD.pop("idem-5")
    assert answer.status_code == 200
    assert answer.json()["id"] == info["effect_id"]


async def test_error_before_commit_commits_nothing_and_frees_the_key(
    inproc: InProcessProvider,
) -> None:
    await configure(inproc, STRIPE)
    await inproc.control.post(
        "/_control/faults", json={"kind": "error_before_commit", "effect": "payment_intent"}
    )
    failed = await stripe_post(inproc, "/v1/payment_intents", INTENT, key="idem-4")
    assert failed.status_code == 500
    assert failed.json()["error"]["type"] == "api_error"
    assert await inproc.commits() == []
    retried = await stripe_post(inproc, "/v1/payment_intents", INTENT, key="idem-4")
    assert retried.status_code == 200
    [commit] = await inproc.commits(reference="A-1")
    assert commit["attempt_no"] == 2


async def test_configured_effects_limit_what_commits_and_what_meets_faults(
    inproc: InProcessProvider,
) -> None:
    upstream = Upstream(
        "api.stripe.com",
        "stripe",
        ReferenceSource("form", "metadata[order_id]"),
        effects=(Route("POST", "/v1/payment_intents"),),
        effect="payment",
    )
    await configure(inproc, upstream)
    await inproc.control.post(
        "/_control/faults", json={"kind": "error_before_commit", "attempts": None}
    )
    customer = await stripe_post(inproc, "/v1/customers", {"metadata[order_id]": "A-1"})
    assert customer.status_code == 200  # not an effect route: no fault, no commit
    intent = await stripe_post(inproc, "/v1/payment_intents", INTENT)
    assert intent.status_code == 500
    await inproc.control.delete("/_control/faults")
    assert (await stripe_post(inproc, "/v1/payment_intents", INTENT)).status_code == 200
    [commit] = await inproc.commits(reference="A-1")
    assert commit["effect"] == "payment"
