"""Everything one provider process shares between its public and control apps."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..upstreams import Upstream
from .barriers import BarrierRegistry
from .config import ProviderConfig
from .faults import FaultPlan
from .store import LedgerStore, ObjectRow

T = TypeVar("T")
Clock = Callable[[], float]


class ProviderRuntime:
    def __init__(self, config: ProviderConfig, clock: Clock = time.time) -> None:
        self.config = config
        self.clock = clock
        self.key_ttl_seconds = config.key_ttl_seconds
        # Records stored up to this time are in every search index, whatever its lag
        # (`catch_up_index`: the harness's "a day later").
        self.index_caught_up_at = 0.0
        self.faults = FaultPlan()
        self.barriers = BarrierRegistry()
        # Which fake answers which host; kept across `reset()` (the harness sets it per case).
        self.upstreams: dict[str, Upstream] = {}
        # Webhook endpoints n8n's service trigger nodes registered, per trigger, by id; kept
        # across `reset()` (they live as long as the workflow stays active).
        self.trigger_endpoints: dict[str, dict[str, dict[str, Any]]] = {}
        self.smtp_port: int | None = None  # the mail fake's port, once it serves
        self._store = LedgerStore(config.db_path, now=clock())
        # One thread owns the SQLite connection: writes are serialised without blocking the loop.
        self._db_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger")
        self._interrupt_waits: set[asyncio.Event] = set()

    async def db(self, operation: Callable[[LedgerStore], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._db_thread, operation, self._store)

    def db_sync(self, operation: Callable[[LedgerStore], T]) -> T:
        """For callers outside the event loop (start-up checks, tests)."""
        return self._db_thread.submit(operation, self._store).result()

    async def pause(self, seconds: float) -> bool:
        """Wait up to `seconds` (capped by config); False if cut short by reset or shutdown."""
        interrupted = asyncio.Event()
        self._interrupt_waits.add(interrupted)
        try:
            async with asyncio.timeout(min(seconds, self.config.max_hold_seconds)):
                await interrupted.wait()
            return False
        except TimeoutError:
            return True
        finally:
            self._interrupt_waits.discard(interrupted)

    def interrupt_waits(self) -> None:
        """Wake every deliberate hold: pauses and barrier holds."""
        for event in self._interrupt_waits:
            event.set()
        self.barriers.release_all()

    def searchable(self, rows: list[ObjectRow], lag_s: float) -> list[ObjectRow]:
        """The rows a search index `lag_s` behind holds now: those stored `lag_s` ago or
        longer, and every one stored before the index last caught up."""
        horizon = max(self.clock() - lag_s, self.index_caught_up_at)
        return [row for row in rows if row.created_at <= horizon]

    def catch_up_index(self) -> float:
        """Every record stored so far becomes searchable (as it is a day later)."""
        self.index_caught_up_at = self.clock()
        return self.index_caught_up_at

    async def reset(self) -> None:
        self.faults.clear()
        self.key_ttl_seconds = self.config.key_ttl_seconds
        self.index_caught_up_at = 0.0
        # Wipe first, then wake held requests: they find their attempt gone and commit nothing.
        await self.db(LedgerStore.reset)
        self.interrupt_waits()
        self.barriers.clear()

    def close(self) -> None:
        self.interrupt_waits()
        self._db_thread.submit(self._store.close).result()
        self._db_thread.shutdown(wait=True)
