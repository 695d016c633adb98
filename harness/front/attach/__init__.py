"""Attach to a warm stack: a run uses the stack that ``n8n-chaos up`` keeps running.

Who does what:
- The ``up`` process (the *owner*) keeps its ``Stack`` and serves ``<run dir>/attach.sock``
  (``serve``). Every process action an attached run asks for (kill, pause, resume, stop,
  start) is done by the owner on its own ``ManagedProcess``: a worker a fault restarts is
  the owner's child, announced to the owner's reaper, ended by ``down``, and it does not die
  when the attached run exits. Environments and their secrets never leave the owner.
- ``<run dir>/attach.json`` (0600) holds what an attacher rebuilds its handles from: ports,
  the database password, the API key, the ledger credential, log paths, the config's shape.
- An attached run (``attach``) gets an ``AttachedStack``: the same typed handles as a stack
  it started (its processes are ``RemoteProcess``-es), its evidence in its own run directory,
  and an exclusive lock on the warm stack (``flock`` on ``<run dir>/attach.lock``), so two
  attached runs never share it. Ending it (``stop``) leaves the stack as it found it and
  stops nothing.
- Deployed workflows stay in the warm n8n; an attached run reuses the ones with the same
  content (``<run dir>/deployed.json``) and replaces changed ones.

Modules: ``protocol`` (what both sides share: files, config shape, messages, attach.json),
``server`` (the owner's side, run by ``up``), ``client`` (the attacher's side, used by ``run``
and the pytest plugin).
"""

from __future__ import annotations

from harness.errors import AttachError
from harness.front.attach.client import (
    AttachedStack,
    AttachLock,
    OwnerClient,
    RemoteProcess,
    attach,
    attach_for_session,
    live_stacks,
)
from harness.front.attach.protocol import (
    DEPLOYED_FILE,
    LOCK_FILE,
    SOCKET_FILE,
    STATE_FILE,
    Progress,
    config_shape,
    shape_differences,
    socket_path,
)
from harness.front.attach.server import ProcessOwner, Serving, how_to_attach, serve, serve_processes

__all__ = [
    "DEPLOYED_FILE",
    "LOCK_FILE",
    "SOCKET_FILE",
    "STATE_FILE",
    "AttachError",
    "AttachLock",
    "AttachedStack",
    "OwnerClient",
    "ProcessOwner",
    "Progress",
    "RemoteProcess",
    "Serving",
    "attach",
    "attach_for_session",
    "config_shape",
    "how_to_attach",
    "live_stacks",
    "serve",
    "serve_processes",
    "shape_differences",
    "socket_path",
]
