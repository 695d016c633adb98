"""Built-in personalities of the record fake, one small module per service, registered by
name: a manifest maps a host to ``"notion"`` and writes no templates."""

from __future__ import annotations

from fake_providers.personalities import (
    airtable,
    hubspot,
    notion,
    pipedrive,
    postgrest,
    sendgrid,
    sheets,
    slack,
    twilio,
)
from fake_providers.personalities.base import GENERIC, Personality

PERSONALITIES: dict[str, Personality] = {
    module.PERSONALITY.name: module.PERSONALITY
    for module in (
        airtable,
        hubspot,
        notion,
        pipedrive,
        postgrest,
        sendgrid,
        sheets,
        slack,
        twilio,
    )
}


def personality(name: str) -> Personality:
    """The personality named (GENERIC for ""); KeyError for a name that is not one."""
    return PERSONALITIES[name] if name else GENERIC


__all__ = ["GENERIC", "PERSONALITIES", "Personality", "personality"]
