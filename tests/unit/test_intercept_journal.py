"""The proxy's journal keeps a request's path as evidence, a credential in its query aside."""

from __future__ import annotations

import pytest

from harness.stack.intercept.journal import masked


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        ("/1/cards?key=k1&token=t1&idList=1", "/1/cards?key=***&token=***&idList=1"),
        (
            "/v1/deals/search?api_token=s&term=Order%201",
            "/v1/deals/search?api_token=***&term=Order%201",
        ),
        ("/o?X-Amz-Signature=ab&id=2", "/o?X-Amz-Signature=***&id=2"),
        ("/api/v2/search.json?query=type:ticket", "/api/v2/search.json?query=type:ticket"),
        ("/v1/charges", "/v1/charges"),
    ],
)
def test_credentials_in_a_query_are_masked_the_rest_kept(path: str, kept: str) -> None:
    assert masked(path) == kept
