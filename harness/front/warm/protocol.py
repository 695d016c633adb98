"""What the client and the warm runner say to each other (stdlib only: the client imports it
before deciding whether it needs anything heavier).

One connection per run, on a unix socket private to the user:
1. client -> runner: one byte carrying the client's stdin, stdout and stderr (SCM_RIGHTS),
   then one JSON line, ``Request``.
2. runner -> client: ``ACCEPTED`` or ``REFUSED <why>``; after a refusal the client runs
   the command itself.
3. client -> runner, any time: ``INTERRUPT`` (the terminal's Ctrl-C), for the run's pytest.
4. runner -> client: ``EXIT <code>`` when the run has ended; the connection then closes.
   A connection closed by the client ends its run as a Ctrl-C would.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

SOCKET_FILE = "runner.sock"
STATE_KEY = "runner_socket"  # where attach.json names the runner's socket
ACCEPTED = "ACCEPTED"
REFUSED = "REFUSED"
INTERRUPT = "INTERRUPT"
EXIT = "EXIT"
STD_FDS = (0, 1, 2)


@dataclass(frozen=True)
class Request:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    # The runner only takes a run of the same interpreter and the same harness code.
    executable: str
    harness_dir: str
    encoding: str
    umask: int

    @classmethod
    def of_this_process(cls, argv: list[str]) -> Request:
        umask = os.umask(0o077)  # read it (the only way is to set it), then put it back
        os.umask(umask)
        return cls(
            argv=argv,
            cwd=os.getcwd(),
            env=dict(os.environ),
            executable=sys.executable,
            harness_dir=harness_dir(),
            encoding=sys.stdout.encoding or "utf-8",
            umask=umask,
        )

    def line(self) -> bytes:
        return json.dumps(asdict(self)).encode() + b"\n"

    @classmethod
    def parse(cls, line: bytes) -> Request:
        return cls(**json.loads(line))


def harness_dir() -> str:
    return str(Path(__file__).resolve().parents[1])
