"""Process checks the stack tests share: is a pid alive, `n8n-chaos down` as a user runs it,
and a CLI the test starts that ends when the test's process dies."""

from __future__ import annotations

import ctypes
import os
import signal
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


def ends_with_the_test() -> None:
    """``preexec_fn`` for a long-lived CLI a test starts (``up``): SIGTERM to it when the
    test's process dies, so a pytest that is killed leaves no stack behind (``up`` ends its
    stack on SIGTERM, as on Ctrl-C)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
