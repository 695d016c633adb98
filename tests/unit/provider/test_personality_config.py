"""Personality and collection config without a provider: references with a regex, the
manifest's personality and collections as the fakes' config."""

from __future__ import annotations

import pytest

from fake_providers.upstreams import ReferenceSource, Route, Upstream, UpstreamConfigError


def test_a_reference_regex_needs_one_group_and_a_value_kind() -> None:
    with pytest.raises(UpstreamConfigError, match="has 0 groups"):
        ReferenceSource("query", "id", r"^eq\..+$")
    with pytest.raises(UpstreamConfigError, match="is a regex already"):
        ReferenceSource("path", "/x/(.+)", "(.+)")
    source = ReferenceSource("header", "X-Ref", r"order-(\w+)")
    assert ReferenceSource.from_json(source.to_json()) == source


def test_the_manifest_maps_a_personality_with_its_default_reference() -> None:
    from harness.workflow.manifest_upstreams import UpstreamSpec
    from harness.workflow.upstream_config import configs_of

    specs = {
        "api.notion.com": UpstreamSpec(personality="notion"),
        "x.supabase.co": UpstreamSpec(
            personality="postgrest", reference={"query": "id", "regex": r"^eq\.(.+)$"}
        ),
        "crm.test": UpstreamSpec(collections={"c": {"writes": ["POST /c"], "reads": ["/q"]}}),
    }
    notion, supabase, crm = configs_of(specs, "order.email")
    assert (notion.fake, notion.personality) == ("record", "notion")
    assert notion.reference is not None and notion.reference.where == "/properties/email"
    assert supabase.reference == ReferenceSource("query", "id", r"^eq\.(.+)$")
    [collection] = crm.collections
    assert (collection.name, collection.writes, collection.reads) == (
        "c",
        (Route("POST", "/c"),),
        (Route("*", "/q"),),
    )
    assert Upstream.from_json(crm.to_json()) == crm
