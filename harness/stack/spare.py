"""A worker booted ahead for the one a fault kills.

An n8n worker takes 5-12 s to boot (most of a worker_kill case's heal, and the case waits
for it). A stack with a spare starts one more worker whose Redis link is parked: a
``latency`` toxic of a week on its upstream stream, so the worker loads its nodes, connects
to Postgres and opens its Redis sockets, but not one command reaches Redis. It stays there,
alive, never taking a job (measured on 2.40.7: parked 150 s, then ready 1.4 s after the
toxic went). Taking the dead worker's place is removing the toxic: Toxiproxy hands the held
bytes on (a latency toxic drops nothing), the boot finishes, and the worker is an ordinary
one with the same settings as every other. The dead one then boots as the next spare,
parked, while the case goes on.

Only the spare's own link is parked, so no fault and no reset touches it: its process is not
among the stack's n8n processes (``Stack.n8n_processes``), and ``Stack.reset_links`` keeps
this one toxic.
"""

from __future__ import annotations

from contextlib import suppress

from harness.stack.toxiproxy import Proxy, ToxiproxyNotFound

PARK_TOXIC = "spare_parked"
PARK_MS = 7 * 24 * 3_600_000  # longer than any stack lives


def park(link: Proxy) -> None:
    """Hold every byte the process sends on this link (before it starts)."""
    with suppress(ToxiproxyNotFound):  # a leftover of the process's earlier life
        link.remove_toxic(PARK_TOXIC)
    link.add_toxic("latency", stream="upstream", name=PARK_TOXIC, latency=PARK_MS)


def unpark(link: Proxy) -> None:
    """Let what the process sent (and all it sends next) through."""
    with suppress(ToxiproxyNotFound):
        link.remove_toxic(PARK_TOXIC)
