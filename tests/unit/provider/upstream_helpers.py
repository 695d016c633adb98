"""Helpers for the upstream fakes' tests: configure upstreams in-process, talk as a host."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import httpx

from fake_providers.upstreams import Upstream, upstreams_to_json

from .conftest import InProcessProvider

STRIPE_KEY = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
FORM = "application/x-www-form-urlencoded"
STRIPE_AUTH = {"Authorization": f"Bearer {STRIPE_KEY}"}


async def configure(inproc: InProcessProvider, *upstreams: Upstream) -> None:
    answer = await inproc.control.put(
        "/_control/upstreams", json=upstreams_to_json(list(upstreams))
    )
    answer.raise_for_status()


async def stripe_post(
    inproc: InProcessProvider,
    path: str,
    form: dict[str, str] | list[tuple[str, str]],
    *,
    key: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    sent = {**STRIPE_AUTH, "Host": "api.stripe.com", "Content-Type": FORM, **(headers or {})}
    if key is not None:
        sent["Idempotency-Key"] = key
    pairs = list(form.items()) if isinstance(form, dict) else form
    return await inproc.public.post(path, content=urlencode(pairs), headers=sent)


async def stripe_get(
    inproc: InProcessProvider, path: str, params: dict[str, str] | None = None
) -> httpx.Response:
    headers = {**STRIPE_AUTH, "Host": "api.stripe.com"}
    return await inproc.public.get(path, params=params, headers=headers)


async def commits(inproc: InProcessProvider, **params: str) -> list[dict[str, Any]]:
    return await inproc.commits(**params)
