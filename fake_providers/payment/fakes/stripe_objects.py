"""Stripe objects the fake creates: which collections exist, required parameters, and the
documents a creation makes (validated first, built when the pipeline processes it)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .stripe_errors import StripeError, invalid_request, missing_object

Document = dict[str, Any]
# Builds the documents of one creation at processing time; the first one is the answer.
Builder = Callable[[float], list[Document]]
# A stored object by (object name, id), read as a write settles.
Lookup = Callable[[str, str], "Document | None"]
# Decides a write again against what is stored as it settles: the documents to write, or a
# StripeError (two refunds of one charge at once: the second finds it refunded, as in Stripe).
Recheck = Callable[[Lookup, list[Document]], list[Document]]
_NOT_ECHOED = frozenset({"expand", "confirm", "default_price_data", "product_data"})


@dataclass(frozen=True)
class StripeKind:
    collection: str  # the path segment: "payment_intents"
    object: str  # the object name and default effect kind: "payment_intent"
    prefix: str  # id prefix: "pi"


KINDS = {
    kind.collection: kind
    for kind in (
        StripeKind("customers", "customer", "cus"),
        StripeKind("payment_intents", "payment_intent", "pi"),
        StripeKind("charges", "charge", "ch"),
        StripeKind("refunds", "refund", "re"),
        StripeKind("products", "product", "prod"),
        StripeKind("prices", "price", "price"),
        StripeKind("payment_links", "payment_link", "plink"),
    )
}
CONFIRM_EFFECT = "payment_intent_confirm"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def references(kind: StripeKind, params: Document) -> list[tuple[str, str, str]]:
    """Objects a creation points at and that must exist: (object name, id, param)."""
    wanted = {
        "refunds": [("charge", "charge"), ("payment_intent", "payment_intent")],
        "prices": [("product", "product")],
    }.get(kind.collection, [])
    return [(name, str(params[param]), param) for name, param in wanted if params.get(param)]


def plan_create(kind: StripeKind, params: Document, related: dict[str, Document]) -> Builder:
    """Validate now (StripeError), build later."""
    planner = _PLANNERS[kind.collection]
    return planner(kind, params, related)


def plan_confirm(intent: Document, params: Document) -> Builder:
    """The confirmed intent, then the charge it made (the commit's effect id)."""
    _confirmable(intent)

    def build(now: float) -> list[Document]:
        charge = _base(KINDS["charges"], {}, now)
        charge.update(
            amount=intent.get("amount", 0),
            currency=intent.get("currency"),
            payment_intent=intent["id"],
            status="succeeded",
            paid=True,
            metadata=intent.get("metadata") or {},
        )
        confirmed = {**intent, **_echo(params), "status": "succeeded"}
        confirmed.update(amount_received=intent.get("amount", 0), latest_charge=charge["id"])
        return [confirmed, charge]

    return build


def recheck_confirm(lookup: Lookup, documents: list[Document]) -> list[Document]:
    """A confirm that settles after another confirm of its intent is refused."""
    _confirmable(lookup("payment_intent", str(documents[0]["id"])) or {})
    return documents


def _confirmable(intent: Document) -> None:
    if intent.get("status") in ("succeeded", "canceled"):
        raise invalid_request(
            "payment_intent_unexpected_state",
            f"This PaymentIntent's status is {intent['status']}; it cannot be confirmed.",
        )


def recheck_refund(lookup: Lookup, documents: list[Document]) -> list[Document]:
    """The refund, then its charge with the amount refunded so far. As Stripe: no more than
    the charge's unrefunded amount (all of it when no amount is given); a charge refunded in
    full refuses every further refund."""
    refund = documents[0]
    charge = _refunded_charge(lookup, refund)
    refunded = int(charge.get("amount_refunded") or 0)
    remaining = int(charge.get("amount") or 0) - refunded
    if remaining <= 0:
        raise invalid_request(
            "charge_already_refunded", f"Charge {charge['id']} has already been refunded."
        )
    amount = remaining if refund.get("amount") is None else int(refund["amount"])
    if amount > remaining:
        raise invalid_request(
            "amount_too_large",
            f"Refund amount ({amount}) is greater than unrefunded amount on charge ({remaining})",
            param="amount",
        )
    charge = {**charge, "amount_refunded": refunded + amount}
    charge["refunded"] = charge["amount_refunded"] >= int(charge.get("amount") or 0)
    return [{**refund, "amount": amount, "charge": charge["id"]}, charge]


def _refunded_charge(lookup: Lookup, refund: Document) -> Document:
    if refund.get("charge"):
        charge_id = str(refund["charge"])
        return _or_missing(lookup("charge", charge_id), "charge", charge_id)
    intent = lookup("payment_intent", str(refund.get("payment_intent"))) or {}
    charge = lookup("charge", str(intent.get("latest_charge") or ""))
    if charge is None:
        raise invalid_request(
            "charge_not_refundable",
            f"This PaymentIntent ({intent.get('id')}) does not have a successful charge to refund.",
            param="payment_intent",
        )
    return charge


def _or_missing(document: Document | None, object_name: str, object_id: str) -> Document:
    if document is None:  # made before a reset of the provider, which forgot it
        raise missing_object(object_name, object_id, object_name)
    return document


def plan_update(current: Document, params: Document) -> Builder:
    def build(_: float) -> list[Document]:
        metadata = {**(current.get("metadata") or {}), **_metadata(params)}
        return [{**current, **_echo(params), "metadata": metadata}]

    return build


def _base(kind: StripeKind, params: Document, now: float) -> Document:
    return {
        **_echo(params),
        "id": new_id(kind.prefix),
        "object": kind.object,
        "created": int(now),
        "livemode": False,
        "metadata": _metadata(params),
    }


def _echo(params: Document) -> Document:
    return {name: value for name, value in params.items() if name not in _NOT_ECHOED}


def _metadata(params: Document) -> Document:
    metadata = params.get("metadata")
    return dict(metadata) if isinstance(metadata, dict) else {}


def _integer(params: Document, name: str, *, required: bool = True) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        if required:
            raise invalid_request(
                "parameter_missing", f"Missing required param: {name}.", param=name
            )
        return None
    try:
        return int(str(value))
    except ValueError:
        raise invalid_request(
            "parameter_invalid_integer", f"Invalid integer: {value}", param=name
        ) from None


def _currency(params: Document, name: str = "currency") -> str:
    value = str(params.get(name) or "")
    if not value:
        raise invalid_request("parameter_missing", f"Missing required param: {name}.", param=name)
    if len(value) != 3 or not value.isalpha():
        raise invalid_request("parameter_invalid_string", f"Invalid currency: {value}", param=name)
    return value.lower()


def _required(params: Document, name: str) -> Any:
    value = params.get(name)
    if value in (None, "", [], {}):
        raise invalid_request("parameter_missing", f"Missing required param: {name}.", param=name)
    return value


def _plan_customer(kind: StripeKind, params: Document, _: dict[str, Document]) -> Builder:
    def build(now: float) -> list[Document]:
        defaults = {"email": None, "name": None, "description": None, "phone": None}
        return [{**defaults, **_base(kind, params, now)}]

    return build


def _plan_payment_intent(kind: StripeKind, params: Document, _: dict[str, Document]) -> Builder:
    amount = _integer(params, "amount")
    currency = _currency(params)
    confirm = str(params.get("confirm", "")).lower() == "true"

    def build(now: float) -> list[Document]:
        document = _base(kind, params, now)
        status = "succeeded" if confirm else "requires_payment_method"
        if not confirm and params.get("payment_method"):
            status = "requires_confirmation"
        document.update(
            amount=amount,
            currency=currency,
            status=status,
            amount_received=amount if confirm else 0,
            capture_method="automatic",
            client_secret=f"{document['id']}_secret_{secrets.token_hex(12)}",
        )
        return [{"customer": None, "description": None, **document}]

    return build


def _plan_charge(kind: StripeKind, params: Document, _: dict[str, Document]) -> Builder:
    amount = _integer(params, "amount")
    currency = _currency(params)

    def build(now: float) -> list[Document]:
        document = _base(kind, params, now)
        document.update(
            amount=amount,
            currency=currency,
            status="succeeded",
            paid=True,
            captured=True,
            amount_captured=amount,
            amount_refunded=0,
            refunded=False,
        )
        return [{"customer": None, "description": None, **document}]

    return build


def _plan_refund(kind: StripeKind, params: Document, related: dict[str, Document]) -> Builder:
    target = related.get(str(params.get("charge") or params.get("payment_intent") or ""))
    if target is None:
        raise invalid_request(
            "parameter_missing",
            "One of the following params should be provided: charge, payment_intent.",
        )
    amount = _integer(params, "amount", required=False)  # none: what is left (recheck_refund)

    def build(now: float) -> list[Document]:
        document = _base(kind, params, now)
        document.update(amount=amount, currency=target.get("currency"), status="succeeded")
        return [document]

    return build


def _plan_product(kind: StripeKind, params: Document, _: dict[str, Document]) -> Builder:
    _required(params, "name")
    price_data = params.get("default_price_data")
    if price_data is not None and not isinstance(price_data, dict):
        raise invalid_request(
            "parameter_invalid_string",
            "default_price_data must be a hash",
            param="default_price_data",
        )
    if isinstance(price_data, dict):
        _currency(price_data)
        _integer(price_data, "unit_amount")

    def build(now: float) -> list[Document]:
        product = {"active": True, "description": None, **_base(kind, params, now)}
        product["default_price"] = None
        if not isinstance(price_data, dict):
            return [product]
        price = _price_document({**price_data, "product": product["id"]}, now)
        product["default_price"] = price["id"]
        return [product, price]

    return build


def _plan_price(kind: StripeKind, params: Document, related: dict[str, Document]) -> Builder:
    _currency(params)
    _integer(params, "unit_amount")
    product_data = params.get("product_data")
    if not params.get("product") and not isinstance(product_data, dict):
        raise invalid_request(
            "parameter_missing", "Missing required param: product.", param="product"
        )
    if isinstance(product_data, dict):
        _required(product_data, "name")

    def build(now: float) -> list[Document]:
        if not isinstance(product_data, dict):
            return [_price_document(params, now)]
        product = {
            "active": True,
            "default_price": None,
            **_base(KINDS["products"], product_data, now),
        }
        return [_price_document({**params, "product": product["id"]}, now), product]

    return build


def _price_document(params: Document, now: float) -> Document:
    document = _base(KINDS["prices"], params, now)
    document.update(
        currency=_currency(params),
        unit_amount=_integer(params, "unit_amount"),
        active=True,
        type="recurring" if params.get("recurring") else "one_time",
    )
    return document


def _plan_payment_link(kind: StripeKind, params: Document, _: dict[str, Document]) -> Builder:
    items = _required(params, "line_items")
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise invalid_request(
            "parameter_invalid_string", "line_items must be a list of hashes", param="line_items"
        )
    for item in items:
        _required(item, "price")
        _integer(item, "quantity")

    def build(now: float) -> list[Document]:
        document = _base(kind, params, now)
        document.update(active=True, url=f"https://buy.stripe.com/test_{secrets.token_hex(10)}")
        return [document]

    return build


# Creations whose outcome depends on stored state (see Recheck).
RECHECKS: dict[str, Recheck] = {"refunds": recheck_refund}

_PLANNERS: dict[str, Callable[[StripeKind, Document, dict[str, Document]], Builder]] = {
    "customers": _plan_customer,
    "payment_intents": _plan_payment_intent,
    "charges": _plan_charge,
    "refunds": _plan_refund,
    "products": _plan_product,
    "prices": _plan_price,
    "payment_links": _plan_payment_link,
}


def not_found_url(method: str, path: str) -> StripeError:
    return StripeError(
        404,
        "invalid_request_error",
        "resource_missing",
        f"Unrecognized request URL ({method}: {path}). The n8n-chaos stripe fake answers"
        f" {', '.join('/v1/' + name for name in KINDS)}.",
    )
