"""Link faults no process is told about: Toxiproxy toxics on links that stay up (the proxy
stays enabled, the sockets stay open), where ``link_outage`` makes a clean cut. Registers
nothing; each fault is its own small file (redis_silent.py, provider_slow_link.py, ...).

- silent: a ``timeout`` toxic with ``timeout=0`` drops every byte of its stream and keeps the
  connection open (a NAT, firewall or load balancer that forgot the flow: a half-open link);
  on both streams nothing passes either way, on one only that direction goes dark. Toxiproxy's
  ``timeout`` toxic still passes a close on (a server that answers and closes, as the provider
  does, would tell the client at once: "socket hang up"), so a ``latency`` toxic of an hour
  goes ahead of it on each stream: what the far end sends, its close too, waits behind it, and
  the link stays dark until the heal, as a forgotten flow does;
- slow: a ``latency`` toxic delays every chunk of its stream by ``latency_ms``.

Links are named ``<who>_<service>``: ``who`` is ``main``, ``webhook``, ``workers`` (every
worker) or ``target`` (only the worker running the case's execution), ``service`` a link of
the topology (``redis``, ``postgres``, an upstream such as ``provider``).

Held ``hold_s`` seconds after the inject (a parameter of each fault, at least 1 s; None: the
stack's own stall detection, lock duration plus stall check interval plus 2 s, read from its
n8n timing profile: 12 s fast, 92 s with n8n's defaults).

Heal: the toxics are removed, a silent link's hour-long hold before its ``timeout`` toxic
(see ``heal``). Toxiproxy's ``timeout`` toxic closes, on removal, every connection it held
(its Cleanup), so each process then sees its socket closed and reconnects;
a ``latency`` toxic's connections go on undelayed (data already held is still delivered late).
Then any n8n process that exited is restarted, and the heal returns once every n8n process
that logged a lost Redis connection logged it recovered (deadline 60 s, else a harness error).

Proof, from outside the harness: Toxiproxy lists each toxic on its link (read back from its
API after adding them), and the kernel lists ESTABLISHED client sockets to the links' listen
ports (/proc/net/tcp) at the inject (the toxic held live connections) and again just before
the heal (the processes kept them: nobody was told, until a client gave up on its own
timeout). No toxic listed, or no socket held, is no proof (NO-EVIDENCE). With ``--backend
compose`` the sockets live in the containers' network namespace: the proof is then
Toxiproxy's listing alone, and it says so.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from harness.engine.faults.base import FaultContext, NoAction
from harness.errors import ConfigError
from harness.stack.n8n import TIMING_PROFILES
from harness.stack.ports import established_to
from harness.stack.toxiproxy import Proxy, Stream, ToxiproxyNotFound

if TYPE_CHECKING:
    from harness.stack.stack import StackConfig

BOTH: tuple[Stream, ...] = ("upstream", "downstream")
WHO = ("main", "webhook", "workers", "target")
MIN_HOLD_S = 1.0
# The bundled workflows' HTTP nodes time out after 10 s (their own "timeout" option).
NODE_TIMEOUT_S = 10.0
HOLD_CLOSE_MS = 3_600_000  # the latency ahead of a silent toxic: longer than any hold


@dataclass(frozen=True)
class Toxic:
    """One Toxiproxy toxic: its type and attributes (ms), put on each stream named."""

    type: str
    streams: tuple[Stream, ...]
    attributes: dict[str, int] = field(default_factory=dict)


def silent(streams: tuple[Stream, ...] = BOTH) -> Toxic:
    return Toxic("timeout", streams, {"timeout": 0})


def slow(latency_ms: int, streams: tuple[Stream, ...]) -> Toxic:
    return Toxic("latency", streams, {"latency": latency_ms})


def check_link(name: str) -> str:
    who, _, service = name.partition("_")
    if who not in WHO or not service:
        raise ConfigError(
            f"unknown link {name!r}: name a link <who>_<service>, who one of "
            f"{', '.join(WHO)} (e.g. workers_redis, target_postgres, main_redis)"
        )
    return name


def check_hold(hold_s: float | None) -> float | None:
    if hold_s is not None and hold_s < MIN_HOLD_S:
        raise ConfigError(
            f"hold {hold_s} s: a link fault holds for at least {MIN_HOLD_S:.0f} s "
            "(give hold_s >= 1, or None for the stack's own stall detection time)"
        )
    return hold_s


def timing_ms(config: StackConfig, variable: str) -> int:
    """One of n8n's timing settings as a stack runs it (its profile, then its n8n_env)."""
    env = {**TIMING_PROFILES[config.n8n_timings], **config.n8n_env}
    return int(env[variable])


def stall_detection_s(config: StackConfig) -> float:
    """How long n8n takes to call a job stalled: the lock runs out, then a stall check."""
    lock = timing_ms(config, "QUEUE_WORKER_LOCK_DURATION")
    return (lock + timing_ms(config, "QUEUE_WORKER_STALLED_INTERVAL")) / 1000 + 2.0


def resolve(ctx: FaultContext, name: str) -> list[Proxy]:
    """The proxies a link name stands for on this stack."""
    who, _, service = name.partition("_")
    proxies, workers = ctx.stack.proxies, ctx.stack.workers
    if who == "workers":
        names = [f"{w.name}_{service}" for w in workers]
    elif who == "target":
        names = [f"{workers[ctx.target()].name}_{service}"]  # WindowNotOpened: no worker ran it
    else:
        names = [name]
    unknown = [n for n in names if n not in proxies]
    if unknown:
        raise ConfigError(
            f"link {name!r}: this stack has no {', '.join(unknown)}; its links are "
            f"{', '.join(sorted(proxies))}"
        )
    return [proxies[n] for n in names]


@dataclass
class ToxicLink(NoAction):
    links: tuple[str, ...]
    toxic: Toxic
    hold_s: float | None = None  # None: the stack's stall detection time
    duration_s: float | None = None  # set at the inject: the hold the timer heals after
    loses_answer: bool = False  # type: ignore[misc]  # per instance
    may_lose_answer: bool = True  # type: ignore[misc]
    # shared_link: it acts on a link the whole stack shares (the case takes the stack alone).
    offers: ClassVar[frozenset[str]] = frozenset({"link_toxic", "shared_link"})
    needs_window: ClassVar[frozenset[str]] = frozenset({"response_held"})
    # Run only by the workflows whose manifest names the fault (production_faults).
    opt_in: ClassVar[bool] = True
    _added: list[tuple[Proxy, str]] = field(default_factory=list)
    _facts: list[str] = field(default_factory=list)
    _held_at_inject: int = 0
    _log_marks: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.links:
            check_link(name)
        check_hold(self.hold_s)

    def hold(self, config: StackConfig) -> float:
        """How long the fault is held on a stack of ``config``: its own hold, else the
        stack's stall detection time."""
        return self.hold_s or stall_detection_s(config)

    def inject(self, ctx: FaultContext) -> None:
        proxies = [p for name in self.links for p in resolve(ctx, name)]  # first: no target
        self._log_marks = ctx.stack.log_marks()
        toxics = {"": self.toxic}  # by the suffix of their names, in the order they go on
        if self.toxic.type == "timeout":  # the close waits behind the latency (see above)
            toxics = {"_hold": slow(HOLD_CLOSE_MS, self.toxic.streams), **toxics}
        for proxy in proxies:
            for suffix, toxic in toxics.items():
                for stream in toxic.streams:
                    added = proxy.add_toxic(
                        toxic.type,
                        stream=stream,
                        name=f"chaos_{self.name}_{stream}{suffix}",
                        **toxic.attributes,
                    )
                    self._added.append((proxy, added.name))
        listed = [
            f"{proxy.name}:{name}"
            for proxy, name in self._added
            if name in {t.name for t in ctx.stack.toxiproxy.proxy(proxy.name).toxics()}
        ]
        self._held_at_inject = self._sockets(ctx, proxies)
        if listed:
            self._facts.append(f"Toxiproxy listed {', '.join(listed)}")
        self.duration_s = self.hold(ctx.stack.config)
        ctx.journal.record(
            "fault.inject",
            self.name,
            links=[p.name for p in proxies],
            toxic=self.toxic.type,
            streams=list(self.toxic.streams),
            attributes=self.toxic.attributes,
            hold_s=self.duration_s,
            sockets_held=self._held_at_inject,
        )

    def heal(self, ctx: FaultContext) -> None:
        if self._added:
            proxies = list({p.name: p for p, _ in self._added}.values())
            still = self._sockets(ctx, proxies)
            self._facts.append(
                f"{self._held_at_inject} connection(s) ESTABLISHED at the inject, "
                f"{still} still at the heal (/proc/net/tcp)"
                if still >= 0
                else "sockets not visible from the host (compose backend)"
            )
            # The hold first, while its connections still stand: a latency toxic removed
            # while the timeout toxic's removal tears its connections down can wedge
            # Toxiproxy's API for good (Shopify/toxiproxy#558; seen once in a rehearsal).
            # What the hold kept then meets the timeout toxic, which drops it; removing that
            # one closes the connections it held.
            for proxy, name in self._added:
                with suppress(ToxiproxyNotFound):  # gone already (a reset between cases)
                    proxy.remove_toxic(name)
            self._added.clear()
        marks, self._log_marks = self._log_marks, {}
        revived = ctx.stack.revive(marks)
        ctx.journal.record("fault.heal", self.name, restarted=revived)

    def _sockets(self, ctx: FaultContext, proxies: list[Proxy]) -> int:
        """Client sockets held open on the links (-1: not visible from here)."""
        if ctx.stack.containers is not None:
            return -1
        return sum(established_to(p.listen_port) for p in proxies)

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        listed = any(f.startswith("Toxiproxy listed") for f in self._facts)
        if not listed or self._held_at_inject == 0:
            return None  # no toxic on the link, or no connection it could hold
        return "; ".join(self._facts)
