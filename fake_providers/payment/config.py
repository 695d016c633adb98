"""Run-time settings of one provider process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DAY_SECONDS = 24 * 60 * 60.0
HOST = "127.0.0.1"  # never anything else: the control port must stay private
READY_PREFIX = "READY "  # the stdout line announcing the real ports, followed by JSON


@dataclass(frozen=True)
class ProviderConfig:
    db_path: Path
    # Completed keys older than this are forgotten: a late redelivery is then a new request.
    key_ttl_seconds: float = DAY_SECONDS
    # Lenient providers process POST /v1/charges without an Idempotency-Key.
    lenient: bool = False
    max_body_bytes: int = 64 * 1024
    # Upper bound for any hold the provider does on purpose (barrier holds, hangs, long-polls),
    # so a forgotten release never wedges a test run.
    max_hold_seconds: float = 300.0
