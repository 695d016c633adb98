"""A credential field that makes the host a service node calls is set to a host the manifest
maps, or to a fixed one: never a secret or an empty string (entries as in n8n's catalogue)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.workflow.credential_hosts import HOST_LABEL, host_field, host_fields


def _type(name: str, base_url: str, *fields: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "properties": list(fields), "test": {"request": {"baseURL": base_url}}}


TYPES = {
    t["name"]: t
    for t in (
        _type("zendeskApi", "=https://{{$credentials.subdomain}}.zendesk.com/api/v2"),
        _type(
            "mailchimpApi",
            '=https://{{$credentials.apiKey.split("-").pop()}}.api.mailchimp.com/3.0',
        ),
        _type(
            "jiraSoftwareCloudApi",
            '={{$credentials.domain?.replace(/\\/+$/, "")}}',
            {"name": "domain", "placeholder": "https://example.atlassian.net"},
        ),
        _type(
            "jiraSoftwareServerApi",
            '={{$credentials.domain?.replace(/\\/+$/, "")}}',
            {"name": "domain", "placeholder": "https://example.com"},
        ),
        _type("mattermostApi", '={{$credentials.baseUrl.replace(/\\/$/, "")}}'),
        _type("twilioApi", "=https://api.twilio.com/2010-04-01/Accounts/{{$credentials.sid}}"),
    )
}
MAPPED = ("api.stripe.com", "acme.zendesk.com", "us21.api.mailchimp.com", "acme.atlassian.net")


@pytest.mark.parametrize(
    ("type_", "hosts", "expected"),
    [
        ("zendeskApi", MAPPED, {"subdomain": "acme"}),
        ("zendeskApi", (), {"subdomain": HOST_LABEL}),
        ("mailchimpApi", MAPPED, {"apiKey": "n8nchaosabc_d-us21"}),
        ("mailchimpApi", (), {"apiKey": f"n8nchaosabc_d-{HOST_LABEL}"}),
        ("jiraSoftwareCloudApi", MAPPED, {"domain": "https://acme.atlassian.net"}),
        ("jiraSoftwareCloudApi", (), {"domain": "https://example.atlassian.net"}),
        # "example.com": a mapped .com host is no sign of the site; the placeholder stays.
        ("jiraSoftwareServerApi", MAPPED, {"domain": "https://example.com"}),
        ("mattermostApi", MAPPED, {}),  # no placeholder: the manifest must give the site
        ("twilioApi", MAPPED, {}),  # the field is in the path, not the host
        ("stripeApi", MAPPED, {}),
    ],
)
def test_the_host_field_is_a_mapped_host_or_a_fixed_one(
    type_: str, hosts: tuple[str, ...], expected: dict[str, str]
) -> None:
    assert host_fields(type_, hosts, "ab-c_d", TYPES) == expected


def test_a_site_field_is_told_from_a_host_label() -> None:
    site, label = host_field("mattermostApi", TYPES), host_field("zendeskApi", TYPES)
    assert site is not None and site.site and site.name == "baseUrl"
    assert label is not None and not label.site and label.after == ".zendesk.com"
