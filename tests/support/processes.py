"""Process checks the stack tests share: is a pid alive, and `n8n-chaos down` as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie, or a process gone between the two looks, is dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def run_down(env: dict[str, str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """``python -m harness down`` with ``env`` (its runs folder), output captured."""
    return subprocess.run(
        [sys.executable, "-m", "harness", "down"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
