"""One request to an upstream fake, parsed once: form bodies with bracket keys nested the way
Stripe reads them, JSON bodies, and the business reference per the Upstream's ReferenceSource."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from email import message_from_bytes
from email.header import decode_header, make_header
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request

from fake_providers.errors import FakeProviderError

from ...personalities.documents import descend
from ...upstreams import ReferenceSource
from ..payloads import read_capped

_BRACKETS = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")
FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"


class UnreadableBody(FakeProviderError, ValueError):
    """A body that claims a media type it does not parse as."""


@dataclass(frozen=True)
class UpstreamRequest:
    method: str
    path: str
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    raw_body: bytes = b""
    form: list[tuple[str, str]] = field(default_factory=list)  # form pairs as sent
    params: Any = None  # nested form fields, or the JSON document, or None
    subject: str = ""  # mail, and a Gmail API send's message (``mime_subject``)

    def fingerprint(self) -> str:
        """Endpoint and parameters, not bytes: reordered form fields are the same request."""
        canonical = json.dumps(self.params, sort_keys=True, separators=(",", ":"), default=str)
        digest = hashlib.sha256(f"{self.method} {self.path}\n{canonical}".encode())
        return digest.hexdigest()


async def read_upstream_request(request: Request, max_bytes: int) -> UpstreamRequest:
    """Raises ProblemError (413) for an oversized body, UnreadableBody for a bad one."""
    raw = await read_capped(request, max_bytes)
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    form: list[tuple[str, str]] = []
    params: Any = None
    if media_type == FORM_MEDIA_TYPE or (not media_type and b"=" in raw and raw[:1] != b"{"):
        form = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
        params = nest_form(form)
    elif media_type == "application/json" or media_type.endswith("+json"):
        try:
            params = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError) as exc:
            raise UnreadableBody(f"the body is not valid JSON: {str(exc)[:200]}") from exc
    elif not raw:
        params = {}
    return UpstreamRequest(
        method=request.method.upper(),
        path=request.url.path,
        query=parse_qsl(request.url.query, keep_blank_values=True),
        headers={name.lower(): value for name, value in reversed(request.headers.items())},
        raw_body=raw,
        form=form,
        params=params,
        subject=mime_subject(params),
    )


def mime_subject(params: Any) -> str:
    """The Subject of the message a JSON body carries as Gmail's API sends it (``{"raw":
    base64url RFC 2822}``, users.messages.send), decoded; "" for any other body. It lets a
    ``subject`` reference find the business key in an email sent through the Gmail node."""
    raw = params.get("raw") if isinstance(params, dict) else None
    if not isinstance(raw, str):
        return ""
    try:
        message = message_from_bytes(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        return str(make_header(decode_header(str(message.get("subject", "")))))
    except (binascii.Error, ValueError, LookupError):
        return ""


def nest_form(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """`metadata[k]=v`, `line_items[0][price]=p`, `expand[]=x` -> nested dicts and lists."""
    root: dict[str, Any] = {}
    for key, value in pairs:
        parts = _key_parts(key)
        node = root
        for part in parts[:-1]:
            name = part if part else str(len(node))
            child = node.get(name)
            if not isinstance(child, dict):
                child = node[name] = {}
            node = child
        node[parts[-1] if parts[-1] else str(len(node))] = value
    nested = _listify(root)
    assert isinstance(nested, dict)
    return nested


def _key_parts(key: str) -> list[str]:
    match = _BRACKETS.match(key)
    if match is None:
        return [key]
    return [match.group(1), *re.findall(r"\[([^\[\]]*)\]", match.group(2))]


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    converted = {name: _listify(child) for name, child in node.items()}
    if converted and all(name.isdigit() for name in converted):
        return [converted[name] for name in sorted(converted, key=int)]
    return converted


def reference_of(source: ReferenceSource | None, request: UpstreamRequest) -> str:
    """The business reference the request carries; "" when unconfigured or absent."""
    if source is None:
        return ""
    where = source.where
    value: Any = None
    if source.kind == "form":
        value = _first(request.form, where)
        if value is None:  # the same bracket key may come as a query parameter (GET, DELETE)
            value = _first(request.query, where)
    elif source.kind == "query":
        value = _first(request.query, where)
    elif source.kind == "header":
        value = request.headers.get(where.lower())
    elif source.kind == "json":
        value = json_pointer(request.params, where)
    else:
        text = {
            "path": request.path,
            "subject": request.subject,
            "body_regex": request.raw_body.decode("utf-8", "replace"),
        }[source.kind]
        match = re.search(where, text)
        if match is not None:
            value = match.group(1) if match.re.groups else match.group(0)
    text = _as_text(value)
    if source.regex:  # the key inside the value: `eq.<key>`, `Order <key> paid`
        inner = re.search(source.regex, text)
        return inner.group(1) or "" if inner is not None else ""
    return text


def json_pointer(document: Any, pointer: str) -> Any:
    """RFC 6901; None when the path does not exist."""
    tokens = pointer.split("/")[1:]
    return descend(document, (t.replace("~1", "/").replace("~0", "~") for t in tokens))


def _first(pairs: list[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in pairs if key == name), None)


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
