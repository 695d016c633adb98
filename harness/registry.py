"""Registration by name (Toxiproxy's toxics): a new fault or crash point is one module
that registers a factory; an unknown name is refused with the list of known ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from harness.errors import ConfigError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[[], object])


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[[], T]] = {}

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator (or plain call) that registers a factory: a class or a function."""

        def add(factory: F) -> F:
            self._factories[name] = factory  # type: ignore[assignment]
            return factory

        return add

    def create(self, name: str) -> T:
        try:
            factory = self._factories[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}"
            ) from None
        return factory()

    def names(self) -> list[str]:
        return sorted(self._factories)
