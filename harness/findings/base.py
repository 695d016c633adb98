"""The probe interface and its registry (the same pattern as faults, crash points and
delivery plans: one module per probe under ``harness.findings.probes``, ``register(name)``
said once, found by ``harness.engine.registry``).

A probe has:
- ``question``: one line, what it asks of n8n;
- ``answers``: its closed vocabulary (every answer it may give, besides ``UNDETERMINED``);
- ``needs_webhook_processor``: run it on a stack with ``n8n webhook`` (default False);
- ``workflow()``: the minimal workflow it deploys (shown in the report);
- ``run(stack)``: strikes its fault, records the evidence and returns ``judge(evidence)``;
- ``judge(evidence)``: the answer as a pure function of the recorded evidence (no stack), so
  it is unit-tested on saved evidence and re-derivable from a findings.json.
An answer outside the vocabulary is a harness bug, never shown as a finding.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from harness.engine.registry import Registry
from harness.errors import HarnessBug
from harness.findings.window import SENDER_S, Held, hold_after_commit
from harness.findings.workflows import charge_workflow
from harness.findings.world import ProbeWorld

if TYPE_CHECKING:
    from harness.stack.stack import Stack

UNDETERMINED = "UNDETERMINED"


@dataclass
class Answer:
    """What a probe established: ``answer`` from its vocabulary (or UNDETERMINED), ``why``
    (one line: how the evidence gives the answer, or why it could not), the closed parts of
    the answer as ``facts``, and the ``evidence`` itself."""

    answer: str
    why: str
    facts: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0

    @property
    def determined(self) -> bool:
        return self.answer != UNDETERMINED

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "why": self.why,
            "facts": self.facts,
            "evidence": self.evidence,
            "duration_s": round(self.duration_s, 2),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Answer:
        return cls(
            answer=str(doc["answer"]),
            why=str(doc.get("why", "")),
            facts=dict(doc.get("facts") or {}),
            evidence=dict(doc.get("evidence") or {}),
            duration_s=float(doc.get("duration_s") or 0.0),
        )


def undetermined(why: str, evidence: dict[str, Any] | None = None) -> Answer:
    return Answer(UNDETERMINED, why, evidence=evidence or {})


class Probe(Protocol):
    name: str  # given by the registry
    question: ClassVar[str]
    answers: ClassVar[tuple[str, ...]]
    # Run on a stack with a webhook processor (``n8n webhook``, StackConfig.webhook_processor).
    needs_webhook_processor: ClassVar[bool]

    def workflow(self) -> dict[str, Any]: ...

    def run(self, stack: Stack) -> Answer: ...

    def judge(self, evidence: dict[str, Any]) -> Answer: ...


class ProbeBase:
    """Defaults shared by the probes (each sets its question, answers, strike and judge), and
    the openings and closings of their runs."""

    name: str = ""
    question: ClassVar[str] = ""
    answers: ClassVar[tuple[str, ...]] = ()
    # True: ``n8n-chaos findings`` runs it on a second stack per version, one with a webhook
    # processor (production webhooks go to ``n8n webhook``; its links webhook_redis, ...).
    needs_webhook_processor: ClassVar[bool] = False
    # The prefix of a run's business key, and of the path its workflow is shown with
    # (``probe-<short>-KEY``; a run's own path is ``probe-<key>``).
    short: ClassVar[str] = "probe"
    needles: ClassVar[tuple[str, ...]] = ()  # the log lines kept as evidence

    def build(self, path: str) -> dict[str, Any]:
        """The workflow the probe deploys, its webhook at ``path``: the charge workflow."""
        return charge_workflow(self.name, path)

    def workflow(self) -> dict[str, Any]:
        return self.build(f"probe-{self.short}-KEY")

    def run(self, stack: Stack) -> Answer:
        raise NotImplementedError

    def judge(self, evidence: dict[str, Any]) -> Answer:
        raise NotImplementedError

    def world(self, stack: Stack) -> ProbeWorld:
        """A run's world, its workflow deployed."""
        world = ProbeWorld(stack, self.short)
        world.deploy(self.build(f"probe-{world.key}"))
        return world

    def missed(self, world: ProbeWorld, why: str, **extra: Any) -> Answer:
        """UNDETERMINED: the window was not reached (``why``), with the evidence so far."""
        return undetermined(why, world.evidence(self.needles, **extra))

    def answered(self, world: ProbeWorld, **extra: Any) -> Answer:
        """The judge's answer from the evidence now (with ``extra``), checked."""
        return checked(self, self.judge(world.evidence(self.needles, **extra)))

    def answered_held(self, world: ProbeWorld, held: Held, **extra: Any) -> Answer:
        """``answered`` for a ``run_held`` strike: the held execution and what its sender saw."""
        return self.answered(world, execution=held.execution_id, sender=held.sender.result, **extra)

    def run_held(
        self,
        stack: Stack,
        strike: Callable[[ProbeWorld, Held], Answer],
        sender_s: float = SENDER_S,
    ) -> Answer:
        """Deploy, send (the sender waits ``sender_s``), hold the charge after its commit
        (``hold_after_commit``) and ``strike``; or UNDETERMINED with why the window was not
        reached."""
        with self.world(stack) as world:
            held = hold_after_commit(world, sender_s)
            return self.missed(world, held) if isinstance(held, str) else strike(world, held)

    @classmethod
    def register_case(cls, name: str, question: str, **attrs: Any) -> None:
        """Register ``name``: this probe asking ``question`` of one case (``attrs``, e.g.
        ``sequential=True``): cases differing only in data share one class body."""
        made = {"question": question, "__module__": cls.__module__, **attrs}
        register(name, type("".join(w.title() for w in name.split("_")), (cls,), made))


def vocabulary(template: str, **choices: Iterable[str]) -> tuple[str, ...]:
    """Every answer ``template`` makes from the choices, e.g.
    ``vocabulary("{status}; {rerun}", status=("error", "crashed"), rerun=("re-run", "no"))``."""
    names = list(choices)
    return tuple(
        template.format(**dict(zip(names, combo, strict=True)))
        for combo in itertools.product(*(tuple(choices[n]) for n in names))
    )


def checked(probe: Probe, answer: Answer) -> Answer:
    """The answer if it is in the probe's vocabulary (or UNDETERMINED); else a harness bug."""
    if answer.answer != UNDETERMINED and answer.answer not in probe.answers:
        raise HarnessBug(
            f"probe {probe.name!r} answered {answer.answer!r}, which is not in its vocabulary; "
            "fix the probe (it must answer from its closed list or say UNDETERMINED)"
        )
    return answer


PROBES: Registry[Probe] = Registry("probe")
register = PROBES.register
get_probe = PROBES.create
known_probes = PROBES.names
