"""What both sides of attach share: the files of a warm stack's run dir, the config shape
that decides whether a stack fits a run, ``attach.json`` and the messages on ``attach.sock``.

Messages are JSON, one per line. A request is ``{"op": OP, "name": PROCESS, ...extra}`` with OP
one of ``ping``, ``state``, ``start``, ``stop`` (extra ``grace_s``), ``kill``, ``pause``,
``resume``; a reply is ``{"ok": true, ...}`` (``ping``: ``run_id``, ``pid``; the others: the
process's ``pid``, ``running``, ``paused``, ``last_returncode``, ``exit_code``) or
``{"ok": false, "error": TEXT}``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.stack.stack import StackConfig

STATE_FILE = "attach.json"
SOCKET_FILE = "attach.sock"
LOCK_FILE = "attach.lock"
DEPLOYED_FILE = "deployed.json"
# Config fields that do not change what a case sees; the rest must match to attach.
_NOT_SHAPE = frozenset(
    {
        "ready_timeout_s",
        "runs_root",
        "run_dir",
        "main_port",
        "db_template",
        "toxiproxy_seed",
        "spare_worker",
        "editor",
    }
)
_UNIX_PATH_MAX = 100  # sun_path is 108 bytes; keep a margin

Progress = Callable[[str], None]


# -- config shape -----------------------------------------------------------------------
def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    return dict(value)  # type: ignore[call-overload]  # the Mapping fields


def config_shape(config: StackConfig) -> dict[str, Any]:
    """The fields of a config that a case depends on, as plain JSON."""
    chosen = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if f.name not in _NOT_SHAPE
    }
    shape: dict[str, Any] = json.loads(json.dumps(chosen, default=_plain, sort_keys=True))
    return shape


def shape_differences(stack_shape: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """What differs; a field one side does not know (a harness of another version) counts
    as its default."""
    defaults = config_shape(StackConfig())
    differences = []
    for key in sorted(set(stack_shape) | set(wanted)):
        have = stack_shape.get(key, defaults.get(key))
        want = wanted.get(key, defaults.get(key))
        if have != want:
            differences.append(f"{key}: the stack has {have!r}, this run wants {want!r}")
    return differences


def socket_path(run_dir: Path, run_id: str, name: str = SOCKET_FILE) -> Path:
    """In the run dir when the path fits a unix socket address, else in the temp dir
    (where the reaper finds it: ``harness.stack.reaper.remove_run_data``)."""
    path = run_dir / name
    if len(str(path)) < _UNIX_PATH_MAX:
        return path
    return Path(tempfile.gettempdir()) / f"n8n-chaos-{run_id}-{name}"


def encode(message: dict[str, Any]) -> bytes:
    """One request or reply as the line sent on the socket."""
    return json.dumps(message).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(line)
    return message


def write_private(path: Path, text: str) -> None:
    # Secrets (DB password, API key): created 0600, never readable by others even briefly.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def read_state(run_dir: Path) -> dict[str, Any] | None:
    """The run dir's ``attach.json``, or None when there is none (or it is unreadable)."""
    try:
        state: dict[str, Any] = json.loads((run_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state
