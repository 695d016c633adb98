"""The window most probes strike in: the provider committed the charge and holds its
response on a barrier (as ``harness.engine.crashpoints.after_commit``), the execution is running,
and the worker that runs it is known (from its "Worker started execution N" log line)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from fake_providers.payment import Barrier, BarrierState
from fake_providers.payment import CrashPoint as ProviderPoint
from harness.findings.world import ProbeWorld, Sender

REACH_S = 60.0  # the charge request reaches the provider
FIND_S = 30.0  # the running execution and its worker are seen
HOLD_S = 300.0  # the provider's own hold limit: beyond any probe's strike
SENDER_S = 150.0  # the probe sender's own timeout: how long the caller waits is measured
SETTLE_S = 90.0  # lock (5 s) + two stall sweeps (5 s each) + n8n's own recheck (up to 30 s)


@dataclass
class Held:
    barrier: Barrier
    sender: Sender
    execution_id: str
    worker: int

    def release(self, world: ProbeWorld) -> None:
        """Let the held response go (into whatever is left of the caller); confirmed."""
        with contextlib.suppress(Exception):
            self.barrier.release()
        world.wait_for(
            "the provider to let the held response go",
            lambda: self.barrier.info().state is not BarrierState.HOLDING,
            10.0,
        )
        world.timeline.record("provider released the held response")

    def kill_worker(self, world: ProbeWorld) -> tuple[float, str | None, str | None]:
        """SIGKILL the worker running the held execution, let the response go and wait for
        the row to leave new/running: (killed at, the OS's kill proof, the row's status)."""
        killed_at, kill_proof = world.kill(world.stack.workers[self.worker])
        self.release(world)
        world.wait_for(
            "the row to leave new/running",
            lambda: world.status(self.execution_id) not in ("new", "running"),
            SETTLE_S,
        )
        return killed_at, kill_proof, world.status(self.execution_id)


def hold_after_commit(world: ProbeWorld, sender_s: float = SENDER_S) -> Held | str:
    """Send the delivery (the sender waits ``sender_s``) and hold it after the commit; or why
    the window was not reached."""
    barrier = world.provider.arm_barrier(None, ProviderPoint.COMMITTED, HOLD_S, reference=world.key)
    sender = world.send(sender_s)
    if not world.wait_for(
        "the charge to be committed and held", lambda: barrier.info().reached, REACH_S
    ):
        barrier.release()
        return f"the charge did not reach the provider within {REACH_S:.0f} s"
    world.timeline.record("provider holds the committed charge", effect=barrier.info().effect_id)
    execution = world.wait_found("the execution to be running", world.running_execution, FIND_S)
    if execution is None:
        barrier.release()
        return f"no execution row was running within {FIND_S:.0f} s of the commit"
    worker = world.wait_found(
        "the worker running it to be known", lambda: world.stack.worker_running(execution), FIND_S
    )
    if worker is None:
        barrier.release()
        return f"no worker logged that it started execution {execution}"
    world.timeline.record("execution runs", execution=execution, worker=worker)
    return Held(barrier, sender, execution, worker)
