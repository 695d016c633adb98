"""redis_silent: every worker's Redis link goes silent while a synchronous webhook's charge
is committed and its answer held: a Toxiproxy ``timeout`` toxic (timeout=0) on both streams
of each ``worker<i>_redis`` drops every byte and keeps every socket open (no process is
told), as a NAT or firewall that forgot the flows does.

Strike: the provider holds the committed charge (``hold_after_commit``); the toxics go on and
the held answer is let go into the worker; the silence is held for the stack's own stall
detection time (lock + stall check + 2 s: 12 s with the fast timings, 92 s with n8n's
defaults), while main's and every worker's ``/healthz/readiness`` are asked once a second.
Heal: the toxics are removed (Toxiproxy closes the connections they held); nothing is
restarted. Then the row is watched until it finishes, and a second delivery (its own key)
shows whether the workers take new work without a restart.
Answer: whether the work after the heal ran, the row's final status, how often the charge
ran, what the first sender saw (and after how long), and whether any health check went red.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from harness import loopback
from harness.engine.faults.toxic_link import stall_detection_s
from harness.errors import HarnessError
from harness.findings import evidence as ev
from harness.findings.base import Answer, ProbeBase, checked, register, undetermined, vocabulary
from harness.findings.probes.main_kill_enqueue import FINISHED, RAN
from harness.findings.probes.recovery_after_commit import STATUSES
from harness.findings.window import Held, hold_after_commit
from harness.findings.workflows import charge_workflow
from harness.findings.world import ProbeWorld, Sender

if TYPE_CHECKING:
    from harness.stack.stack import Stack

TOXIC = "probe_redis_silent"
SETTLE_S = 120.0  # after the heal: the row finishes (a stall sweep, n8n's recheck)
SENDER_S = 150.0  # the probe sender's own timeout: how long the caller waits is measured
AFTER_S = 60.0  # the delivery after the heal is answered
HEALTH_TIMEOUT_S = 2.0
SETTLE_WAIT = "the row to finish after the heal"
AFTER_WAIT = "the delivery after the heal to be answered"
NEEDLES = (
    "Redis",
    "stalled",
    "lock",
    "Worker started execution",
    "Worker finished execution",
    "crashed",
    "error",
)


@register("redis_silent")
class RedisSilent(ProbeBase):
    question = (
        "Every worker's Redis link goes silent (bytes dropped both ways, sockets kept) after a "
        "synchronous webhook's charge committed, for the stack's stall detection time, then "
        "the silence ends: do health checks notice, what does the sender see, what status "
        "does the row end in, how often does the charge run, and do workers take new work "
        "without a restart?"
    )
    answers = vocabulary(
        "work after the heal {resumed}; row ends {status}; {ran}; sender {sender}; "
        "health checks {health}",
        resumed=("ran", "did not run"),
        status=STATUSES,
        ran=("charge never ran", "charge ran once", "charge ran twice or more"),
        sender=("got 200", "got 500", "got another status", "got no answer"),
        health=("stayed green", "went red"),
    )

    def workflow(self) -> dict[str, Any]:
        return charge_workflow("redis_silent", "probe-redis-silent-KEY")

    def run(self, stack: Stack) -> Answer:
        with ProbeWorld(stack, "redis-silent") as world:
            world.deploy(charge_workflow("redis_silent", f"probe-{world.key}"))
            held = hold_after_commit(world)
            if isinstance(held, str):
                return undetermined(held, world.evidence(NEEDLES))
            observed = self._strike(world, held)
            execution = held.execution_id
            world.wait_for(SETTLE_WAIT, lambda: world.status(execution) in FINISHED, SETTLE_S)
            world.wait_for("the sender's answer", held.sender.done, SENDER_S)
            after_key = f"{world.key}-after"
            assert world.deployed is not None and world.deployed.webhook_url is not None
            after = Sender(world.timeline, world.deployed.webhook_url, {"key": after_key}, AFTER_S)
            world.wait_for(AFTER_WAIT, after.done, AFTER_S + 5)
            observed |= {
                "worker_starts": world.worker_starts(execution),
                "after_sender": after.result,
                "after_commits": len(world.provider.commits(after_key)),
                "timings": stack.config.n8n_timings,
            }
            evidence = world.evidence(
                NEEDLES, execution=execution, sender=held.sender.result, observed=observed
            )
            return checked(self, self.judge(evidence))

    def _strike(self, world: ProbeWorld, held: Held) -> dict[str, Any]:
        stack = world.stack
        links = [stack.proxies[f"worker{i}_redis"] for i in range(len(stack.workers))]
        observed: dict[str, Any] = {"hold_s": stall_detection_s(stack.config), "health": []}
        try:
            for link in links:
                for stream in ("upstream", "downstream"):
                    link.add_toxic("timeout", stream=stream, name=f"{TOXIC}_{stream}", timeout=0)
            observed["toxics_listed"] = [
                f"{link.name}:{t.name}" for link in links for t in link.toxics()
            ]
            world.timeline.record("worker Redis links silent", links=[p.name for p in links])
            held.release(world)
            ends = time.monotonic() + observed["hold_s"]
            while time.monotonic() < ends:
                observed["health"].append(self._health(world))
                time.sleep(max(0.0, min(1.0, ends - time.monotonic())))
            observed["status_at_heal"] = world.status(held.execution_id)
            observed["sender_at_heal"] = dict(held.sender.result) if held.sender.done() else None
        finally:
            for link in links:
                for stream in ("upstream", "downstream"):
                    with contextlib.suppress(HarnessError):
                        link.remove_toxic(f"{TOXIC}_{stream}")
            world.timeline.record("worker Redis links healed")
        observed["running_after_heal"] = [p.name for p in stack.n8n_processes if p.process.running]
        return observed

    @staticmethod
    def _health(world: ProbeWorld) -> dict[str, Any]:
        answers: dict[str, Any] = {"at": world.timeline.now()}
        for proc in world.stack.n8n_processes:
            try:
                url = f"{proc.base_url}/healthz/readiness"
                answers[proc.name] = loopback.get(url, timeout=HEALTH_TIMEOUT_S).status_code
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
        resumed = after.get("status") == 200 and int(seen.get("after_commits") or 0) == 1
        facts: dict[str, Any] = {
            "timings": seen.get("timings"),
            "hold_s": seen.get("hold_s"),
            "toxics_listed": seen.get("toxics_listed"),
            "execution": execution,
            "status_path": path,
            "status_at_heal": seen.get("status_at_heal"),
            "commits": commits,
            "attempts": ev.attempt_count(evidence),
            "worker_starts": seen.get("worker_starts"),
            "sender": sender,
            "sender_waited_s": waited,
            "sender_answered_during_silence": seen.get("sender_at_heal") is not None,
            "health_samples": len(seen.get("health") or []),
            "health_red": red[:10],
            "after_heal_status": after.get("status"),
            "after_heal_commits": seen.get("after_commits"),
            "running_after_heal": seen.get("running_after_heal"),
        }
        if not seen.get("toxics_listed"):
            return undetermined("Toxiproxy listed no toxic on the workers' Redis links", evidence)
        final = ev.final_status(evidence, execution)
        ran = RAN.get(commits, "charge ran twice or more")
        health = "went red" if red else "stayed green"
        answer = (
            f"work after the heal {'ran' if resumed else 'did not run'}; row ends {final}; "
            f"{ran}; sender {sender}; health checks {health}"
        )
        why = (
            f"{facts['timings']} timings, silent {facts['hold_s']} s: execution {execution} went "
            f"{' -> '.join(path) or '(no status seen)'} ({facts['status_at_heal']} at the heal); "
            f"{commits} commit(s), {facts['worker_starts']} worker start(s); the sender "
            f"{sender} after {waited} s"
            + (f" ({sent['error']})" if sent.get("error") else "")
            + (" during the silence" if facts["sender_answered_during_silence"] else "")
            + f"; {facts['health_samples']} health sample(s), "
            + (f"red: {', '.join(red[:3])}" if red else "every one 200")
            + f"; the delivery after the heal got {after.get('status')} with "
            f"{facts['after_heal_commits']} commit(s)"
        )
        return Answer(answer, why, facts, evidence)
