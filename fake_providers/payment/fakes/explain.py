"""What an upstream fake keeps of each effect request beside its reference, so the evidence
explains it without the fake's code: where the reference was read (and, when it is empty,
what was there instead) and a short preview of the body, secrets masked (authorization
values, api keys, tokens, passwords, card numbers and their codes)."""

from __future__ import annotations

import json
import re
from typing import Any

from ...upstreams import ReferenceSource
from ..store import AttemptStart
from .inbound import UpstreamRequest, json_pointer, reference_of

PREVIEW_CHARS = 160
_SHORT_CHARS = 60
MASK = "***"
# Names whose values are secrets: authorization, api keys, tokens, passwords, card data.
_SECRET_NAME = re.compile(
    r"authori[sz]ation|api[-_]?key|token|secret|passw(or)?d|cvc|cvv|card\[number\]|^number$",
    re.IGNORECASE,
)
# A card number: 13 to 19 digits (Luhn-valid), maybe grouped by spaces or dashes.
_CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
_SCHEME = re.compile(r"\b(Bearer|Basic)\s+[^\s\"',&]+", re.IGNORECASE)


def attempt_start(
    effect: str,
    key: str | None,
    source: ReferenceSource | None,
    request: UpstreamRequest,
    received_at: float,
) -> AttemptStart:
    """The attempt as the pipeline logs it: the reference, with its note and the preview."""
    reference = reference_of(source, request)
    return AttemptStart(
        effect,
        key,
        reference,
        request.fingerprint(),
        received_at,
        preview=body_preview(request),
        reference_note=reference_note(source, request, reference),
    )


def reference_note(source: ReferenceSource | None, request: UpstreamRequest, found: str) -> str:
    """``json /order/id``; when nothing was found, also what was there: ``json /order/id:
    absent (top-level fields: amount, customer)``."""
    if source is None:
        return "no reference configured for this host (manifest upstreams.<host>.reference)"
    where = f"{source.kind} {source.where}"
    if found:
        return where
    return f"{where}: {_what_was_there(source, request)}"


def _what_was_there(source: ReferenceSource, request: UpstreamRequest) -> str:
    kind, name = source.kind, source.where
    if kind == "json":
        value = json_pointer(request.params, name)
        if value is None:
            return f"absent ({_fields_of(request.params)})"
        return f"{_short(value)} (no text)"
    if kind in ("form", "query"):
        pairs = request.form if kind == "form" else request.query
        value = next((v for k, v in pairs if k == name), None)
        if value is None:
            names = ", ".join(dict.fromkeys(k for k, _ in pairs)) or "none"
            return f"absent ({kind} fields: {_short(names)})"
        return "empty"
    if kind == "header":
        sent = request.headers.get(name.lower())
        return "absent" if sent is None else "empty"
    text = {"path": request.path, "subject": request.subject}.get(
        kind, request.raw_body.decode("utf-8", "replace")
    )
    return f"no match in {_short(mask_text(text))}"


def _fields_of(params: Any) -> str:
    if isinstance(params, dict):
        return "top-level fields: " + (_short(", ".join(params)) if params else "none")
    return "the body is no JSON object" if params is not None else "no JSON body"


def body_preview(request: UpstreamRequest) -> str:
    """The body's first ``PREVIEW_CHARS`` characters, secrets masked."""
    if request.form:
        text = "&".join(f"{k}={MASK if _SECRET_NAME.search(k) else v}" for k, v in request.form)
    elif request.params is not None and request.raw_body.strip():
        text = json.dumps(masked(request.params), separators=(",", ":"), default=str)
    else:
        text = request.raw_body.decode("utf-8", "replace")
    text = mask_text(text)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def masked(value: Any) -> Any:
    """A JSON document with the values of secret-named fields replaced."""
    if isinstance(value, dict):
        return {
            k: MASK if _SECRET_NAME.search(str(k)) and value[k] else masked(value[k]) for k in value
        }
    if isinstance(value, list):
        return [masked(item) for item in value]
    return value


def mask_text(text: str) -> str:
    """Authorization values and card numbers in free text masked (a card keeps its last 4)."""
    text = _SCHEME.sub(lambda m: f"{m.group(1)} {MASK}", text)
    return _CARD.sub(_card_masked, text)


def _card_masked(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return f"{MASK}{digits[-4:]}" if _luhn(digits) else match.group(0)


def _luhn(digits: str) -> bool:
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= _SHORT_CHARS else text[: _SHORT_CHARS - 1] + "…"
