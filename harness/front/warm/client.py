"""The client side: hand ``n8n-chaos run`` to the warm runner of a live ``up``.

Light imports only (the protocol, the declared options, the runs folder's default; not
the attach module with its database driver): the point is to start in a few milliseconds.
Only runs that would attach are handed over (no ``--no-attach``, no second backend, one
job); anything else, or no live runner, runs in this process as before.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from pathlib import Path
from types import FrameType

from harness.front.options import BY_DEST, JOBS_FLAGS, XDIST_FLAGS
from harness.front.warm.protocol import ACCEPTED, EXIT, INTERRUPT, STATE_KEY, STD_FDS, Request
from harness.stack.run import default_runs_root

ATTACH_STATE = "attach.json"  # harness.front.attach.protocol.STATE_FILE, not imported: it is heavy


def forward(args: list[str]) -> int | None:
    """The exit code of the command as the warm runner ran it; None when this process must
    run it itself."""
    if not args or args[0] != "run" or not _would_attach(args[1:]):
        return None
    for sock in _runner_sockets(args[1:]):
        code = _run_at(sock, args)
        if code is not None:
            return code
    return None


def _would_attach(options: list[str]) -> bool:
    """A conservative reading of `run`'s options (click parses them properly later); the
    flags are those harness.front.options declares, in every spelling `run` accepts."""
    for i, option in enumerate(options):
        name, value = _name_and_value(option, options[i + 1] if i + 1 < len(options) else "")
        if name in (*BY_DEST["no_attach"].flags, "--help", "-h"):
            return False
        if name in BY_DEST["backend"].flags and value != "native":
            return False
        # -j N: one stack per job; pytest's own -n N (xdist) passed through likewise.
        # No -j: `run` chooses 1 itself when a live `up` stack would be attached.
        if name in (*JOBS_FLAGS, *XDIST_FLAGS) and value not in ("0", "1"):
            return False
    return True


def _name_and_value(option: str, following: str) -> tuple[str, str]:
    """``--name=value``, ``-jN``/``-nN``, or the name with the argument that follows it."""
    if option.startswith("--"):
        name, equals, value = option.partition("=")
        return name, value if equals else following
    if option[:2] in ("-j", "-n") and len(option) > 2:
        return option[:2], option[2:]
    return option, following


def _runner_sockets(options: list[str]) -> list[Path]:
    """The named stack's runner (``--attach RUN_DIR``), else the live ones under the runs
    folder, newest first (the run itself picks the stack the same way)."""
    named = _option_value(options, BY_DEST["attach_dir"].flags)
    if named is not None:
        run_dirs = [Path(named)]
    else:
        runs_dir = _option_value(options, BY_DEST["runs_dir"].flags)
        root = Path(runs_dir) if runs_dir else default_runs_root()
        run_dirs = [p.parent for p in root.glob(f"*/{ATTACH_STATE}") if not p.parent.is_symlink()]
    found = []
    for run_dir in run_dirs:
        try:
            state = json.loads((run_dir / ATTACH_STATE).read_text())
            os.kill(int(state["owner_pid"]), 0)
            found.append((float(state.get("started_at", 0)), Path(state[STATE_KEY])))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # gone, stale, or an `up` without a runner
    return [sock for _, sock in sorted(found, reverse=True)]


def _option_value(options: list[str], names: tuple[str, ...]) -> str | None:
    for i, option in enumerate(options):
        name, value = _name_and_value(option, options[i + 1] if i + 1 < len(options) else "")
        if name in names and value:
            return value
    return None


def _run_at(sock: Path, args: list[str]) -> int | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(sock))
        socket.send_fds(conn, [b"\0"], list(STD_FDS))
        conn.sendall(Request.of_this_process([sys.argv[0], *args]).line())
        reader = conn.makefile("rb")
        if not reader.readline().startswith(ACCEPTED.encode()):
            return None  # refused (another Python or checkout): run here
    except OSError:
        conn.close()
        return None
    with conn, _interrupts_relayed(conn):
        for line in reader:
            if line.startswith(EXIT.encode()):
                return int(line.split()[1])
    print(
        f"error: the warm runner ({sock}) ended before the run did: `n8n-chaos up` may have "
        "stopped; see its warm-runner.log, or run with --no-attach",
        file=sys.stderr,
    )
    return 2


class _interrupts_relayed:  # used as a context manager, like a function
    """Ctrl-C and SIGTERM of this process go to the run as INTERRUPT."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.previous: dict[int, object] = {}

    def _relay(self, signum: int, frame: FrameType | None) -> None:
        del signum, frame
        try:
            self.conn.sendall(f"{INTERRUPT}\n".encode())
        except OSError:
            raise KeyboardInterrupt from None

    def __enter__(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, self._relay)

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
