"""Parsing of the Idempotency-Key request header.

draft-ietf-httpapi-idempotency-key-header makes the value an RFC 8941 sf-string
(`Idempotency-Key: "abc"`); most clients (n8n's HTTP Request node, Stripe SDKs) send a bare
token (`Idempotency-Key: abc`). Both are accepted and name the same key.
"""

from __future__ import annotations

from ..errors import FakeProviderError

MAX_KEY_LENGTH = 255
_PRINTABLE = frozenset(chr(code) for code in range(0x20, 0x7F))
_VISIBLE = _PRINTABLE - {" "}


class InvalidIdempotencyKey(FakeProviderError, ValueError):
    """The header is present but is not a usable key; answered with 400."""


def parse_idempotency_key(values: list[str]) -> str | None:
    """Return the key from all `Idempotency-Key` header values, or None when absent."""
    if not values:
        return None
    if len(values) > 1:
        raise InvalidIdempotencyKey("send exactly one Idempotency-Key header")
    raw = values[0].strip(" \t")
    key = _parse_sf_string(raw) if raw.startswith('"') else _parse_token(raw)
    if not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise InvalidIdempotencyKey(f"key length must be 1..{MAX_KEY_LENGTH} characters")
    return key


def _parse_token(raw: str) -> str:
    if not set(raw) <= _VISIBLE:
        raise InvalidIdempotencyKey("an unquoted key may hold only visible ASCII characters")
    return raw


def _parse_sf_string(raw: str) -> str:
    """RFC 8941 section 4.2.5; parameters after the string are not supported."""
    chars: list[str] = []
    position = 1
    while position < len(raw):
        char = raw[position]
        if char == "\\":
            escaped = raw[position + 1 : position + 2]
            if escaped not in ('"', "\\"):
                raise InvalidIdempotencyKey('only \\" and \\\\ may be escaped in a quoted key')
            chars.append(escaped)
            position += 2
            continue
        if char == '"':
            if position != len(raw) - 1:
                raise InvalidIdempotencyKey("nothing may follow the closing quote of the key")
            return "".join(chars)
        if char not in _PRINTABLE:
            raise InvalidIdempotencyKey("a quoted key may hold only printable ASCII characters")
        chars.append(char)
        position += 1
    raise InvalidIdempotencyKey("quoted key has no closing quote")
