"""Registration by name (Toxiproxy's toxics), owned in one place.

A plug-in is one module in its family's package (``harness/engine/faults``,
``harness/engine/crashpoints``, ``harness/engine/deliveries``, ``harness/findings/probes``) that
registers a factory under its name, said once:

    @register("worker_kill")
    class WorkerKill(NoAction): ...

    register("redis_blip", lambda: LinkOutage(_redis_links, 2.0))

The registry gives every instance its ``name``. Modules are found, not listed: the first
lookup imports every module of the family packages, and of the extra packages named in
``N8N_CHAOS_PLUGINS`` (comma-separated, e.g. ``acme_chaos.plugins``; a package's modules
register into whichever registry they import). An unknown name is a ``ConfigError`` naming
the known ones; a name registered from two files is a ``ConfigError`` naming both.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from harness.errors import ConfigError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[[], object])

PLUGIN_PACKAGES = (
    "harness.engine.faults",
    "harness.engine.crashpoints",
    "harness.engine.deliveries",
    "harness.findings.probes",
)
EXTRA_PLUGINS_ENV = "N8N_CHAOS_PLUGINS"

_loaded: set[str] = set()


def load_plugins() -> None:
    """Import every plug-in module once (the family packages, then the extra ones)."""
    extra = [p.strip() for p in os.environ.get(EXTRA_PLUGINS_ENV, "").split(",") if p.strip()]
    for package in (*PLUGIN_PACKAGES, *extra):
        if package not in _loaded:
            _loaded.add(package)
            _import_all(package)


def _import_all(package_name: str) -> None:
    try:
        package = importlib.import_module(package_name)
    except ImportError as exc:
        raise ConfigError(
            f"{EXTRA_PLUGINS_ENV}: cannot import plug-in package {package_name!r} ({exc}); "
            "name an importable package or module"
        ) from exc
    for module in pkgutil.iter_modules(getattr(package, "__path__", [])):
        if not module.name.startswith("_") and module.name != "base":
            importlib.import_module(f"{package_name}.{module.name}")


def forget_extra_plugins() -> None:
    """Let the next lookup import the extra packages again (tests add packages on the fly)."""
    _loaded.intersection_update(PLUGIN_PACKAGES)


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[[], T]] = {}
        self._origins: dict[str, str] = {}

    def register(self, name: str, factory: Callable[[], Any] | None = None) -> Any:
        """Register ``factory`` under ``name``; without a factory, a class decorator."""

        def add(made: F) -> F:
            origin = _origin(made)
            taken = self._origins.get(name)
            if taken is not None and taken != origin:
                # A second plug-in under a taken name would silently replace the first.
                raise ConfigError(
                    f"{self.kind} {name!r} is registered twice: in {taken} and in {origin};"
                    " rename one of them"
                )
            if isinstance(made, type):
                made.name = name  # type: ignore[attr-defined]
            self._factories[name] = made  # type: ignore[assignment]
            self._origins[name] = origin
            return made

        if factory is not None:
            add(factory)
            return factory
        return add

    def create(self, name: str) -> T:
        load_plugins()
        try:
            factory = self._factories[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}"
            ) from None
        try:
            made = factory()
        except ConfigError as exc:  # a plug-in's own parameters (a link, a hold): say whose
            raise ConfigError(f"{self.origin(name)}: {self.kind} {name!r}: {exc}") from None
        made.name = name  # type: ignore[attr-defined]
        return made

    def names(self) -> list[str]:
        load_plugins()
        return sorted(self._factories)

    def origin(self, name: str) -> str:
        """The file that registered ``name`` (for error messages)."""
        return self._origins.get(name, "?")

    def unregister(self, name: str) -> None:
        self._factories.pop(name, None)
        self._origins.pop(name, None)


def _origin(factory: object) -> str:
    module = sys.modules.get(getattr(factory, "__module__", ""), None)
    return str(getattr(module, "__file__", None) or getattr(factory, "__module__", "?"))
