"""How many stacks `n8n-chaos run` runs side by side when -j is not given: as many as the
machine holds (three per core, and its free memory), or one when a live `up` stack is attached
(the desk flow: the warm runner runs the case on that stack, in seconds)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError
from harness.front.options import XDIST_FLAGS, ChaosOptions

# What one stack takes at its peak (n8n main + 2 workers, Postgres, Redis, Toxiproxy, the
# provider, the pytest worker): bench/matrix.py measured 2.5 GB for one stack and 4.7 GB for
# two (docs/speed.md), so about 2.4 GB each.
STACK_PEAK_BYTES = 2_400_000_000
GB = 1_000_000_000
# A case mostly waits on n8n (stall detection, a restart, the quiet period): on 2 cores the
# bundled matrix (309 cases) took 18 min 37 s on 4 stacks (125 % CPU) and 15 min 9 s on 6
# (167 % CPU, 15.4 GB summed RSS with the machine's own 4.8 GB), each case slower but more at
# once (bench/README.md, "The matrix on several stacks").
STACKS_PER_CORE = 3
# A stack's bring-up costs about 25-30 CPU s (n8n's main, workers and task runners loading
# their modules), taken from the cases of every other stack: beyond one stack per core, each
# must bring enough cases to pay for it. One workflow's 32 cases (`run -k payment_idempotent`,
# 2 cores) took 276 s on 6 stacks, 211 s on 4, 220 s on 3, 267 s on 2 (bench/README.md,
# "Stacks for a few cases").
CASES_PER_STACK = 10


@dataclass(frozen=True)
class Machine:
    cores: int
    available_bytes: int | None  # None: not known (no /proc/meminfo)


@dataclass(frozen=True)
class StackChoice:
    count: int
    why: str

    def header(self) -> str:
        return f"stacks: {self.count} ({self.why})"


def this_machine() -> Machine:
    try:
        cores = len(os.sched_getaffinity(0))  # the cores this process may use
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return Machine(cores=cores, available_bytes=_available_memory())


def _available_memory() -> int | None:
    """MemAvailable: what new processes can take without swapping (free + reclaimable)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name == "MemAvailable":
                return int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def choose_stacks(
    machine: Machine, attaching: Path | None, cases: int | None = None
) -> StackChoice:
    """The automatic choice: one to attach to a warm stack, else min(STACKS_PER_CORE x cores,
    memory / one stack's peak, and, when the cases selected are known, a stack per core or per
    CASES_PER_STACK cases, whichever is more, but never more than the cases), at least one."""
    if attaching is not None:
        return StackChoice(1, f"attaching to the warm stack in {attaching}; -j N to choose")
    # Each limit with its own number, so the header says which one decided.
    cores = f"{machine.cores} core{'s' if machine.cores != 1 else ''}"
    limits = [(STACKS_PER_CORE * machine.cores, f"{cores} ({STACKS_PER_CORE} a core)")]
    memory = ", free memory unknown"
    if machine.available_bytes is not None:
        a_stack = f"{STACK_PEAK_BYTES / GB:.1f} GB a stack"
        free = f"{machine.available_bytes / GB:.0f} GB free"
        limits.append((machine.available_bytes // STACK_PEAK_BYTES, f"{free} ({a_stack})"))
        memory = ""
    if cases is not None:
        pays = min(cases, max(machine.cores, math.ceil(cases / CASES_PER_STACK)))
        per = f"one per {CASES_PER_STACK}, at least one per core"
        limits.append((pays, f"{cases} case{'s' if cases != 1 else ''} selected ({per})"))
    least = ", ".join(f"{n} for {reason}" for n, reason in limits)
    return StackChoice(
        max(1, min(n for n, _ in limits)), f"the least of {least}{memory}; -j N to choose"
    )


# Where pytest's -k also looks besides the case id: a word found here selects every case.
_SUITE_NAMES = "harness/front/suite.py::test_exactly_once"


def keyword_selects(case_id: str, keyword: str | None) -> bool:
    """Whether pytest's ``-k keyword`` keeps this case: the same expression language (and,
    or, not, parentheses; a word matches a part of a name, case ignored), evaluated by
    pytest's own parser over the names pytest sees for a case."""
    if not keyword:
        return True
    from _pytest.mark.expression import Expression

    names = (case_id.lower(), _SUITE_NAMES.lower())
    try:
        expression = Expression.compile(keyword)
    except SyntaxError as exc:  # pytest 8-9 raise SyntaxError; older ones a subclass of it
        raise ConfigError(
            f"-k {keyword!r} is not a pytest keyword expression ({exc}); "
            "e.g. -k 'payment_naive and worker_kill'"
        ) from None
    return expression.evaluate(lambda word, /, **_: any(word.lower() in n for n in names))


def cases_selected(case_ids: list[str], keyword: str | None) -> int | None:
    """How many cases `-k` keeps (None when none: `run` refuses such a -k)."""
    return sum(keyword_selects(case_id, keyword) for case_id in case_ids) or None


def xdist_in(args: list[str]) -> str | None:
    """The value of pytest's own -n/--numprocesses among the arguments `run` hands on."""
    for i, arg in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else "?"
        if arg in XDIST_FLAGS:
            return following
        if arg.startswith("--numprocesses="):
            return arg.partition("=")[2]
        if arg.startswith("-n") and not arg.startswith("--"):
            return arg[2:]
    return None


def warm_stack_to_attach(options: ChaosOptions) -> Path | None:
    """The run folder of the `up` stack this run's session would attach to (as
    harness.front.attach.attach_for_session decides it), else None."""
    if options.no_attach:
        return None
    if options.attach_dir is not None:
        return options.attach_dir
    from harness.front.attach import STATE_FILE, config_shape, live_stacks, shape_differences
    from harness.stack.run import default_runs_root

    live = live_stacks(options.runs_dir or default_runs_root())
    if not live:
        return None
    wanted = options.stack_config()
    try:
        shape = json.loads((live[0] / STATE_FILE).read_text()).get("shape", {})
    except (OSError, ValueError):
        return None
    return None if shape_differences(shape, config_shape(wanted)) else live[0]
