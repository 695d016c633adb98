"""No window: the fault is in place before the delivery (a provider fault planted for the
effect request, or no fault at all); the fault's own proof says whether it met the effect."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.engine.crashpoints.base import Window, register

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld


@register("none")
class NoWindow(Window):
    offers = frozenset({"planted"})
    shares_stack = True  # strikes nothing: the fault (if any) was planted for the case

    def arm(self, run: CaseWorld) -> None:
        run.inject()
        self.fact = "the fault was in place before the delivery"
