"""wait_resume_worker_kill / wait_resume_racing_recovery: a Wait node (On Webhook Call) is
resumed while an n8n process dies.

The workflow is ``wait_resume_workflow`` (Webhook -> Respond (answers the resume URL) ->
Wait -> Charge, one provider commit per resumed run); the first delivery parks the
execution as ``waiting``.
- ``wait_resume_worker_kill``: the resume URL is called; the worker that picked up the
  resumed part ("Worker started execution N" once more) is SIGKILLed while the provider holds
  the committed charge's response (as ``recovery_after_commit``), the response is released,
  the row is watched until it leaves new/running, the worker restarted and watched for a
  re-run; then the resume URL is called a second time.
- ``wait_resume_racing_recovery``: main is SIGKILLed while the execution waits and started
  again; the resume URL is called over and over from the kill on (each call waits for its
  answer) until one gets an HTTP answer (racing main's start-up), and once more right after
  main is ready.
The answer: the row's final status, how often the Charge ran, and what the calls got.

How n8n 2.40.7 answers a resume call (packages/cli ``webhooks/waiting-webhooks.ts``): first
the URL's token against the execution's stored ``resumeToken`` (401 "Invalid token" when they
differ), then 409 when the row is running or finished; a call before main registered its
routes gets Express's 404 ("Cannot POST /webhook-waiting/N").
"""

from __future__ import annotations

import threading
import time
from typing import Any

from fake_providers.payment import CrashPoint as ProviderPoint
from harness.findings import evidence as ev
from harness.findings.base import Answer, register, undetermined, vocabulary
from harness.findings.probes.wait_resume_twice import CALL_WORDS, Waited, WaitResumeProbe, call_word
from harness.findings.window import HOLD_S, Held
from harness.findings.world import FINISHED, ProbeWorld, Sender

REACH_S = 60.0  # the resumed run's charge reaches the provider
FIND_S = 30.0  # the worker that picked the resumed part up is seen
CALL_S = 30.0  # one resume call is answered
RERUN_S = 20.0  # after the killed worker is back: time for any recovery to re-run it
AFTER_S = 10.0  # after the second call: time for it to charge again
RESTART_S = 150.0  # main is ready again (its own ready timeout is within this)
RACE_PAUSE_S = 0.3  # between two racing calls that got no HTTP answer
FINISH_S = 60.0  # after main is ready: the resumed run finishes
HELD_WAIT = "the resumed charge to be committed and held"
RERUN_WAIT = "anything to re-run the execution"


def _starts(world: ProbeWorld, execution: str) -> list[int]:
    """How often each worker logged that it started the execution (since the probe began)."""
    needle = f"Worker started execution {execution} ("
    return [world.log_since(w.name).count(needle) for w in world.stack.workers]


@register("wait_resume_worker_kill")
class WaitResumeWorkerKill(WaitResumeProbe):
    question = (
        "A Wait node (On Webhook Call) is resumed and the worker running the resumed part is "
        "SIGKILLed after the step after it committed its charge: what status does the "
        "execution end in, is anything re-run, how many charges, and what does a second "
        "call of the resume URL get?"
    )
    answers = vocabulary(
        "{status}; {rerun}; {charges} charge(s); the second resume call got {call}",
        status=ev.STATUSES,
        rerun=("re-run", "not re-run"),
        charges=ev.COUNTS,
        call=CALL_WORDS,
    )
    short = "waitkill"
    needles = (*WaitResumeProbe.needles, "stalled", "crashed", "recover")

    def resume(self, world: ProbeWorld, execution: str, url: str, sent: dict[str, Any]) -> Answer:
        del sent  # the first delivery's answer is not part of this one
        held = self._hold_resumed(world, execution, url)
        if isinstance(held, str):
            return self.missed(world, held, execution=execution)
        return self._strike(world, held, url)

    def _hold_resumed(self, world: ProbeWorld, execution: str, url: str) -> Held | str:
        """Resume the execution and hold its charge after the commit, with the worker that
        runs the resumed part known; or why the window was not reached."""
        before = _starts(world, execution)
        barrier = world.provider.arm_barrier(
            None, ProviderPoint.COMMITTED, HOLD_S, reference=world.key
        )
        world.timeline.record("first resume call")
        call = Sender(world.timeline, url, {"resume": 1}, CALL_S)
        if not world.wait_for(HELD_WAIT, lambda: barrier.info().reached, REACH_S):
            barrier.release()
            return f"the resumed charge did not reach the provider within {REACH_S:.0f} s"
        effect = barrier.info().effect_id
        world.timeline.record("provider holds the committed charge", effect=effect)
        picked: list[int] = []

        def worker_known() -> bool:
            now = _starts(world, execution)
            picked[:] = [i for i, (a, b) in enumerate(zip(before, now, strict=True)) if b > a]
            return bool(picked)

        if not world.wait_for("the worker running the resumed part", worker_known, FIND_S):
            barrier.release()
            return f"no worker logged that it started execution {execution} again"
        world.timeline.record("resumed part runs", execution=execution, worker=picked[0])
        return Held(barrier, call, execution, picked[0])

    def _strike(self, world: ProbeWorld, held: Held, url: str) -> Answer:
        execution, victim = held.execution_id, world.stack.workers[held.worker]
        killed_at, kill_proof, status_after_kill = held.kill_worker(world)
        world.wait_for("the first resume call's answer", held.sender.done, CALL_S)
        world.restart(victim)
        starts = sum(_starts(world, execution))

        def rerun() -> bool:
            others = [r for r in world.rows() if r["id"] != execution]
            return (
                bool(others)
                or sum(_starts(world, execution)) > starts
                or (len(world.attempts()) > 1)
            )

        world.wait_for(RERUN_WAIT, rerun, RERUN_S)
        settled = world.status(execution) not in ("new", "running")
        commits_before = len(world.commits())
        world.timeline.record("second resume call")
        second = Sender(world.timeline, url, {"resume": 2}, CALL_S)
        world.wait_for("the second resume call's answer", second.done, CALL_S + 5)
        world.wait_for(
            "the second call to charge", lambda: len(world.commits()) > commits_before, AFTER_S
        )
        observed = {
            "status_after_kill": status_after_kill,
            "seconds_kill_to_status": world.seconds_to_leave(execution, killed_at),
            "worker_starts": sum(_starts(world, execution)),
            "kill_proof": kill_proof,
            "victim": victim.name,
            "settled_before_second_call": settled,
        }
        return self.answered(
            world,
            execution=execution,
            resume_calls=[dict(held.sender.result), dict(second.result)],
            observed=observed,
        )

    def judge_resumed(self, evidence: dict[str, Any], waited: Waited) -> Answer:
        execution, _, calls = waited
        seen = ev.observed(evidence)
        final = ev.final_status(evidence, execution)
        reran = ev.reached(evidence, RERUN_WAIT)
        commits = ev.commit_count(evidence)
        facts: dict[str, Any] = {
            **ev.facts(evidence, "execution", "status_path", "status_after_kill"),
            **ev.facts(evidence, "seconds_kill_to_status", "final_status", "worker_starts"),
            **ev.facts(evidence, "commits", "attempts", "executions"),
            "resume_statuses": [c.get("status") for c in calls],
            **ev.facts(evidence, "kill_proof"),
        }
        if not ev.reached(evidence, HELD_WAIT):
            return undetermined("the resumed charge was not held after its commit", evidence)
        if not facts["kill_proof"]:
            return undetermined(ev.unkilled(evidence), evidence)
        if len(calls) != 2 or not seen.get("settled_before_second_call"):
            return undetermined(
                "the second resume call was not made after the row left new/running", evidence
            )
        second = call_word(calls[1])
        answer = (
            f"{final}; {'re-run' if reran else 'not re-run'}; {ev.count_word(commits)} charge(s); "
            f"the second resume call got {second}"
        )
        why = (
            f"{ev.course(facts, 'commits', 'attempts', 'worker_starts', 'executions')}; "
            "the resume calls got HTTP "
            f"{facts['resume_statuses']}"
        )
        return Answer(answer, why, facts, evidence)


@register("wait_resume_racing_recovery")
class WaitResumeRacingRecovery(WaitResumeProbe):
    question = (
        "n8n main is SIGKILLed while an execution waits in a Wait node (On Webhook Call) and "
        "started again; its resume URL is called during main's start-up and right after it "
        "is ready: does the rest run once, never or twice, and what do the calls get?"
    )
    answers = vocabulary(
        "row ends {status}; charge ran {ran}; the first answered resume call ({when} main was "
        "ready) got {first}; the next got {second}",
        status=ev.STATUSES,
        ran=ev.TIMES,
        when=("before", "after"),
        first=CALL_WORDS,
        second=CALL_WORDS,
    )

    short = "waitrace"
    needles = WaitResumeWorkerKill.needles

    def resume(self, world: ProbeWorld, execution: str, url: str, sent: dict[str, Any]) -> Answer:
        del sent  # the first delivery's answer is not part of this one
        main = world.stack.main
        _, kill_proof = world.kill(main)
        restarted = threading.Thread(
            target=world.restart, args=(main,), daemon=True, name="probe-main-restart"
        )
        restarted.start()
        racing = self._race(world, url, restarted)
        restarted.join(RESTART_S)
        world.timeline.record("call right after main is ready")
        after = Sender(world.timeline, url, {"resume": "after ready"}, CALL_S)
        world.wait_for("the call after ready to be answered", after.done, CALL_S + 5)
        world.wait_for(
            "the resumed run to finish",
            lambda: world.status(execution) in FINISHED and len(world.commits()) > 0,
            FINISH_S,
        )
        world.wait_for("a second charge", lambda: len(world.commits()) > 1, AFTER_S)
        observed = {
            "kill_proof": kill_proof,
            "main_ready": not restarted.is_alive(),
            "racing_calls_without_answer": len(racing) - 1,
            "worker_starts": sum(_starts(world, execution)),
        }
        return self.answered(
            world,
            execution=execution,
            resume_calls=[racing[-1] if racing else {}, dict(after.result)],
            racing_calls=racing[-20:],
            observed=observed,
        )

    def _race(
        self, world: ProbeWorld, url: str, restarted: threading.Thread
    ) -> list[dict[str, Any]]:
        """Call the resume URL, one call after the other, until one gets an HTTP answer (or
        main's restart is over and still none did): every call, the answered one last."""
        calls: list[dict[str, Any]] = []
        deadline = time.monotonic() + RESTART_S
        while time.monotonic() < deadline:
            call = Sender(world.timeline, url, {"resume": f"racing {len(calls)}"}, CALL_S)
            world.wait_for("a racing call's answer", call.done, CALL_S + 5)
            calls.append(dict(call.result))
            if call.result.get("status") is not None:
                break
            if not restarted.is_alive() and len(calls) > 1:
                break  # main is ready and calls still get no answer: no race to win
            time.sleep(RACE_PAUSE_S)  # a retry interval, not synchronisation
        return calls

    def judge_resumed(self, evidence: dict[str, Any], waited: Waited) -> Answer:
        calls = waited[2]
        seen = ev.observed(evidence)
        commits = ev.commit_count(evidence)
        ready_at = next(
            (
                e["t"]
                for e in evidence.get("timeline") or ()
                if e.get("event") == "ready" and e.get("process") == "main"
            ),
            None,
        )
        facts: dict[str, Any] = {
            **ev.facts(evidence, *ev.RUN_FACTS),
            "resume_statuses": [c.get("status") for c in calls],
            "racing_calls_without_answer": seen.get("racing_calls_without_answer"),
            "main_ready_at": ready_at,
            "kill_proof": seen.get("kill_proof"),
        }
        if not facts["kill_proof"]:
            return undetermined("main did not end by SIGKILL", evidence)
        if ready_at is None or not seen.get("main_ready"):
            return undetermined("main was not ready again after its restart", evidence)
        if len(calls) != 2 or calls[0].get("status") is None:
            return undetermined("no resume call got an HTTP answer while main started", evidence)
        first_before = float(calls[0]["answered_at"]) <= float(ready_at)
        facts["first_answered_before_ready"] = first_before
        answer = (
            f"row ends {facts['final_status']}; charge ran {ev.times(commits)}; the first answered "
            "resume "
            f"call ({'before' if first_before else 'after'} main was ready) got "
            f"{call_word(calls[0])}; the next got {call_word(calls[1])}"
        )
        why = (
            f"{ev.course(facts)}; main SIGKILLed and ready again "
            f"at t={ready_at}; {facts['racing_calls_without_answer']} resume call(s) got no "
            f"HTTP answer first, then HTTP {facts['resume_statuses']}; "
            + ev.tally(facts, "commits", "executions")
        )
        return Answer(answer, why, facts, evidence)
