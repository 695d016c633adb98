"""Named crash points (WHEN a fault strikes), one module each, registered by name. A new
crash point is one new module here plus its line below."""

from harness.crashpoints import (  # noqa: F401 - imported for their registrations
    after_commit,
    after_response,
    before_send,
    in_ledger_write,
    none,
)
from harness.crashpoints.base import CRASHPOINTS, CrashPoint, get_crashpoint, known_crashpoints

__all__ = ["CRASHPOINTS", "CrashPoint", "get_crashpoint", "known_crashpoints"]
