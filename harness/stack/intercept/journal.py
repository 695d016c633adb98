"""The proxy's journal: one JSON line per intercepted request, in the run directory.

The addon appends (one ``write`` per line on an O_APPEND descriptor, so lines never
interleave); the harness reads it back with ``read_journal``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

# forwarded: sent to the provider's link; refused: answered 502 by the proxy (no fake for the
# host); loopback: a 127.0.0.1/localhost target passed through unchanged; tls_failed: the n8n
# process did not accept the proxy's certificate (its CA is not trusted).
Outcome = Literal["forwarded", "refused", "loopback", "tls_failed"]


# A credential in a query string (Trello's key and token, Pipedrive's api_token, a signed
# URL's signature): this run's secret, kept out of the evidence all the same.
_SECRET_PARAMETER = re.compile(
    r"([?&;][\w.-]*(?:token|key|secret|password|signature|auth)[\w.-]*=)[^&;#]*", re.IGNORECASE
)


def masked(path: str) -> str:
    """``path`` with the values of its query's credential parameters replaced by ``***``."""
    return _SECRET_PARAMETER.sub(r"\1***", path)


@dataclass(frozen=True)
class JournalEntry:
    time: float
    listener: str
    method: str
    scheme: str
    host: str
    path: str
    status: int | None  # None: no answer (the upstream link failed, or TLS failed)
    outcome: Outcome
    error: str | None = None


class JournalWriter:
    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def append(self, entry: JournalEntry) -> None:
        os.write(self._fd, (json.dumps(asdict(entry)) + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)


def read_journal(path: Path) -> list[JournalEntry]:
    """Every entry so far, oldest first (a missing journal is an empty one)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    # The last piece is "" or a line still being written: only whole lines count.
    lines = text.split("\n")[:-1]
    return [JournalEntry(**json.loads(line)) for line in lines if line.strip()]
