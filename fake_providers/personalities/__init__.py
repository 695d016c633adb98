"""Built-in personalities of the record fake, one small module per service, registered by
name: a manifest maps a host to ``"notion"`` and writes no templates. A module of this package
that defines ``PERSONALITY`` is one: a new service is a new file, nothing to list here."""

from __future__ import annotations

import importlib
import pkgutil

from fake_providers.personalities.base import GENERIC, Personality

_MODULES = (
    importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)
)
PERSONALITIES: dict[str, Personality] = {
    module.PERSONALITY.name: module.PERSONALITY
    for module in _MODULES
    if isinstance(getattr(module, "PERSONALITY", None), Personality)
}


def personality(name: str) -> Personality:
    """The personality named (GENERIC for ""); KeyError for a name that is not one."""
    return PERSONALITIES[name] if name else GENERIC


__all__ = ["GENERIC", "PERSONALITIES", "Personality", "personality"]
