"""Idempotency-Key header parsing: bare tokens and RFC 8941 sf-strings."""

from __future__ import annotations

import pytest

from fake_providers.payment.keys import InvalidIdempotencyKey, parse_idempotency_key


@pytest.mark.parametrize(
    ("header", "key"),
    [
        ("8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"),
        ('"8e03978e-40d5"', "8e03978e-40d5"),
        ('"with space"', "with space"),
        (r'"quote \" and backslash \\"', 'quote " and backslash \\'),
        ("  padded\t", "padded"),
        ("x" * 255, "x" * 255),
    ],
)
def test_accepts_tokens_and_quoted_strings(header: str, key: str) -> None:
    assert parse_idempotency_key([header]) == key


def test_absent_header_is_no_key() -> None:
    assert parse_idempotency_key([]) is None


@pytest.mark.parametrize(
    "header",
    [
        "",
        '""',
        "x" * 256,
        '"' + "x" * 256 + '"',
        "has space",
        "tab\tinside",
        "caf\u00e9",
        '"unterminated',
        '"bad \\n escape"',
        '"trailing";param=1',
        '"ctrl\x01"',
    ],
)
def test_rejects_bad_format(header: str) -> None:
    with pytest.raises(InvalidIdempotencyKey):
        parse_idempotency_key([header])


def test_rejects_repeated_header() -> None:
    with pytest.raises(InvalidIdempotencyKey):
        parse_idempotency_key(["a", "b"])
