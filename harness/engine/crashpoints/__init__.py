"""Named crash points: WHEN a fault strikes. One module per crash point, registering by name;
``harness.engine.registry`` finds the modules, so a new crash point is one new file here."""

from harness.engine.crashpoints.base import (
    CRASHPOINTS,
    CrashPoint,
    get_crashpoint,
    known_crashpoints,
)

__all__ = ["CRASHPOINTS", "CrashPoint", "get_crashpoint", "known_crashpoints"]
