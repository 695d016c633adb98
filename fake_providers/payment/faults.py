"""The per-attempt fault plan: which request gets which fault.

A rule matches on idempotency key, reference prefix, effect kind (all optional; a rule with none
of them matches any request) and on the attempt number (1-based, counted per key, or per
reference for requests without one). Rules are tried in the order they were added; the first
match wins, and one attempt gets at most one fault. Faults apply only to requests that got as
far as processing (claimed their key): replays, 409s and 422s are never faulted.

The plan lives in memory: after a provider restart the harness sets it again.

Kinds:
- delay_before_commit  wait `delay_ms`, then process normally
- error_before_commit  500, nothing committed, the key released (a retry processes anew)
- rate_limited         429 with `Retry-After: retry_after_s`, nothing committed, key released
- commit_then_error    commit, then 500; the 500 is what a replay returns (Stripe stores 500s)
- commit_then_close    commit, then close the connection (FIN) without any HTTP response
- commit_then_reset    commit, then reset the connection (RST) without any HTTP response
- commit_then_hang     commit, then hold the response for `hang_ms` before sending it
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from .kinds import FaultKind


@dataclass
class FaultRule:
    kind: FaultKind
    key: str | None = None
    reference_prefix: str | None = None
    effect: str | None = None
    attempts: frozenset[int] | None = None  # None: every attempt
    delay_ms: int = 0
    hang_ms: int = 30_000
    retry_after_s: int = 1
    id: str = ""
    hits: int = 0  # how often the rule fired: evidence that a fault landed

    def matches(self, effect: str, key: str | None, reference: str, attempt_no: int) -> bool:
        return (
            (self.key is None or self.key == key)
            and (self.reference_prefix is None or reference.startswith(self.reference_prefix))
            and (self.effect is None or self.effect == effect)
            and (self.attempts is None or attempt_no in self.attempts)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind.value,
            "key": self.key,
            "reference_prefix": self.reference_prefix,
            "effect": str(self.effect) if self.effect else None,
            "attempts": sorted(self.attempts) if self.attempts is not None else None,
            "delay_ms": self.delay_ms,
            "hang_ms": self.hang_ms,
            "retry_after_s": self.retry_after_s,
            "hits": self.hits,
        }


@dataclass
class FaultPlan:
    rules: list[FaultRule] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add(self, rule: FaultRule) -> FaultRule:
        rule.id = f"fault_{next(self._ids)}"
        self.rules.append(rule)
        return rule

    def remove(self, rule_id: str) -> bool:
        before = len(self.rules)
        self.rules = [rule for rule in self.rules if rule.id != rule_id]
        return len(self.rules) != before

    def clear(self) -> None:
        self.rules.clear()

    def take(
        self, effect: str, key: str | None, reference: str, attempt_no: int
    ) -> FaultRule | None:
        """The fault for this attempt, counted as fired."""
        for rule in self.rules:
            if rule.matches(effect, key, reference, attempt_no):
                rule.hits += 1
                return rule
        return None
