"""One probe per link fault: every fault plug-in that is a ``ToxicLink`` (a Toxiproxy toxic on
links that stay up: silent, slow, one process, one direction; see
``harness.engine.faults.toxic_link``) is also asked as a finding, under the fault's own name,
with the fault's own inject, proof and heal. A new link fault is a new finding for free.

Strike: the provider holds a synchronous webhook's committed charge (``hold_after_commit``,
which also names the worker running it: the fault's ``target`` links); the fault is
injected and the held answer let go into it; the fault is held for its own hold (by default
the stack's stall detection: lock + stall check + 2 s, 12 s fast, 92 s with n8n's defaults)
while main's and every worker's ``/healthz/readiness`` are asked once a second.
Heal: the fault's heal (toxics removed, which closes the connections a ``timeout`` toxic held;
any n8n process that exited restarted; then every lost Redis connection logged recovered).
Then the row is watched until it finishes, and a second delivery (its own key) shows whether
the stack takes new work.
Answer: whether the work after the heal ran (and whether a process had to be restarted for
it), the row's final status, how often the charge ran, what the first sender saw (and after
how long), and whether any health check went red. Proof that the fault struck is the fault's
own: Toxiproxy listed the toxic, and the kernel listed the sockets it held.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from harness import loopback
from harness.engine.faults.base import FaultContext, get_fault, known_faults
from harness.engine.faults.toxic_link import ToxicLink
from harness.engine.journal import Journal
from harness.errors import HarnessError
from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, undetermined, vocabulary
from harness.findings.window import Held
from harness.findings.world import WORKER_LINES, ProbeWorld, Sender

if TYPE_CHECKING:
    from harness.stack.stack import Stack

SETTLE_S = 120.0  # after the heal: the row finishes (a stall sweep, n8n's recheck)
AFTER_S = 60.0  # the delivery after the heal is answered
HEALTH_TIMEOUT_S = 2.0
WHO = {
    "main": "main's",
    "webhook": "the webhook processor's",
    "workers": "every worker's",
    "target": "the running worker's",
}
RESUMED = ("ran", "ran after a restart", "did not run")


def _what(fault: ToxicLink) -> str:
    """The fault in words, from its data: which links, what the toxic does, which way."""
    links = " and ".join(
        f"{WHO[who]} {service} link" for who, _, service in (n.partition("_") for n in fault.links)
    )
    toxic = fault.toxic
    ways = "both ways" if len(toxic.streams) == 2 else f"{toxic.streams[0]} only"
    does = "goes silent (bytes dropped, sockets kept)" if toxic.type == "timeout" else "turns slow"
    held = f"for {fault.hold_s:.0f} s" if fault.hold_s else "for the stack's stall detection time"
    return f"{links[0].upper()}{links[1:]} {does}, {ways}, {held}"


class LinkFaultProbe(ProbeBase):
    needles = ("Redis", "stalled", "lock", *WORKER_LINES, "crashed", "error")
    answers = vocabulary(
        "work after the heal {resumed}; row ends {status}; {ran}; sender {sender}; "
        "health checks {health}",
        resumed=RESUMED,
        **ev.RUN_WORDS,
        health=("stayed green", "went red"),
    )

    def run(self, stack: Stack) -> Answer:
        fault = get_fault(self.name)
        assert isinstance(fault, ToxicLink)
        # The caller waits out the fault and AFTER_S more: longer is the same "no answer".
        return self.run_held(
            stack,
            lambda world, held: self._strike(world, held, fault),
            sender_s=fault.hold(stack.config) + AFTER_S,
        )

    def _strike(self, world: ProbeWorld, held: Held, fault: ToxicLink) -> Answer:
        assert world.deployed is not None
        ctx = FaultContext(world.stack, Journal(), world.key, target_worker=held.worker)
        observed: dict[str, Any] = {"fault": _what(fault), "health": []}
        try:
            fault.inject(ctx)
            world.timeline.record("fault injected", fault=self.name)
            observed["hold_s"] = fault.duration_s
            held.release(world)
            ends = time.monotonic() + (fault.duration_s or 0.0)
            while time.monotonic() < ends:
                observed["health"].append(self._health(world))
                time.sleep(max(0.0, min(1.0, ends - time.monotonic())))
            observed["status_at_heal"] = world.status(held.execution_id)
            observed["sender_at_heal"] = dict(held.sender.result) if held.sender.done() else None
        finally:
            try:
                fault.heal(ctx)
            except HarnessError as exc:  # a process that never reconnected is a finding
                observed["heal_error"] = str(exc)[:300]
            world.timeline.record("fault healed", fault=self.name)
        heals = [e for e in ctx.journal.entries if e.kind == "fault.heal"]
        execution = held.execution_id
        world.wait_finished("the row to finish after the heal", execution, SETTLE_S)
        world.wait_for("the sender's answer", held.sender.done, held.sender.timeout_s + 5)
        after_key = f"{world.key}-after"
        assert world.deployed.webhook_url is not None
        after = Sender(world.timeline, world.deployed.webhook_url, {"key": after_key}, AFTER_S)
        world.wait_for("the delivery after the heal to be answered", after.done, AFTER_S + 5)
        observed |= {
            "proof": fault.proof(ctx),
            "restarted": [name for e in heals for name in e.data["restarted"]],
            "worker_starts": world.worker_starts(execution),
            "after_sender": after.result,
            "after_commits": len(world.provider.commits(after_key)),
            "timings": world.stack.config.n8n_timings,
            "journal": ctx.journal.to_json(),
        }
        return self.answered_held(world, held, observed=observed)

    @staticmethod
    def _health(world: ProbeWorld) -> dict[str, Any]:
        answers: dict[str, Any] = {"at": world.timeline.now()}
        for proc in world.stack.n8n_processes:
            try:
                answers[proc.name] = loopback.get(
                    proc.readiness_url, timeout=HEALTH_TIMEOUT_S
                ).status_code
            except Exception as exc:  # no answer is an answer
                answers[proc.name] = type(exc).__name__
        return answers

    def judge(self, evidence: dict[str, Any]) -> Answer:
        """The answer from the recorded evidence alone (see ``harness.findings.evidence``)."""
        seen = ev.observed(evidence)
        execution = evidence.get("execution")
        path = ev.status_path(evidence, execution)
        commits = ev.commit_count(evidence)
        sender = ev.sender_seen(evidence.get("sender"))
        sent = evidence.get("sender") or {}
        waited = (
            round(sent["answered_at"] - sent["sent_at"], 1)
            if "answered_at" in sent and "sent_at" in sent
            else None
        )
        red = [
            f"{name} {answer} at {round(sample['at'], 1)} s"
            for sample in seen.get("health") or []
            for name, answer in sample.items()
            if name != "at" and answer != 200
        ]
        after = seen.get("after_sender") or {}
        restarted = seen.get("restarted") or []
        ran_after = after.get("status") == 200 and int(seen.get("after_commits") or 0) == 1
        resumed = RESUMED[2] if not ran_after else RESUMED[1] if restarted else RESUMED[0]
        facts: dict[str, Any] = {
            "fault": seen.get("fault"),
            "timings": seen.get("timings"),
            "hold_s": seen.get("hold_s"),
            "proof": seen.get("proof"),
            "execution": execution,
            "status_path": path,
            "status_at_heal": seen.get("status_at_heal"),
            "commits": commits,
            "attempts": ev.attempt_count(evidence),
            "worker_starts": seen.get("worker_starts"),
            "sender": sender,
            "sender_waited_s": waited,
            "sender_answered_during_fault": seen.get("sender_at_heal") is not None,
            "health_samples": len(seen.get("health") or []),
            "health_red": red[:10],
            "restarted_at_heal": restarted,
            "heal_error": seen.get("heal_error"),
            "after_heal_status": after.get("status"),
            "after_heal_commits": seen.get("after_commits"),
        }
        if not seen.get("proof"):
            return undetermined(
                "no proof that the fault struck (Toxiproxy listed no toxic, or no connection "
                "was held on its links)",
                evidence,
            )
        final = ev.final_status(evidence, execution)
        ran = ev.charge_ran(commits)
        health = "went red" if red else "stayed green"
        answer = (
            f"work after the heal {resumed}; row ends {final}; {ran}; sender {sender}; "
            f"health checks {health}"
        )
        why = (
            f"{facts['timings']} timings, {facts['fault']} ({facts['hold_s']} s): "
            f"{ev.course(facts)} ({facts['status_at_heal']} at the heal); {commits} commit(s), "
            f"{facts['worker_starts']} worker start(s); the sender {sender} after {waited} s"
            + (f" ({sent['error']})" if sent.get("error") else "")
            + (" during the fault" if facts["sender_answered_during_fault"] else "")
            + f"; {facts['health_samples']} health sample(s), "
            + (f"red: {', '.join(red[:3])}" if red else "every one 200")
            + (f"; restarted at the heal: {', '.join(restarted)}" if restarted else "")
            + (f"; heal: {facts['heal_error']}" if facts["heal_error"] else "")
            + f"; the delivery after the heal got {after.get('status')} with "
            f"{facts['after_heal_commits']} commit(s); proof: {facts['proof']}"
        )
        return Answer(answer, why, facts, evidence)


def _register_every_link_fault() -> None:
    for name in known_faults():
        fault = get_fault(name)
        if isinstance(fault, ToxicLink):
            question = (
                f"{_what(fault)}, after a synchronous webhook's charge committed and while its "
                "answer goes back, then healed: do health checks notice, what does the sender "
                "see, what status does the row end in, how often does the charge run, and is "
                "new work taken without a restart?"
            )
            LinkFaultProbe.register_case(name, question, short=name.replace("_", "-"))


_register_every_link_fault()
