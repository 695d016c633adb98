"""Internal: The options of a stack run, declared once.

Each ``Option`` is rendered as a click option of the commands it names (``n8n-chaos up``,
``run``, ...) and as a pytest option of ``harness.front.plugin``; ``n8n-chaos run`` hands every
one it was given on to pytest by its pytest flag. A new option is one entry in ``OPTIONS``
and a field of ``ChaosOptions`` (the values, typed, as every command and the plugin read them).

Light on purpose (no click, no pytest at import): the warm runner's client reads the flags
here to decide whether a run can be handed over, and it must start in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from harness.stack.install import DEFAULT_N8N_VERSION, SUPPORTED_N8N_VERSIONS

if TYPE_CHECKING:
    import click
    import pytest

    from harness.stack.stack import StackConfig

Command = Literal["install", "up", "run", "list", "findings"]
# value: one value; flag: on when given; multiple: repeatable, a list of values.
Kind = Literal["value", "flag", "multiple"]
# dir / file: a path (click checks what it names; pytest hands on the string).
ValueType = Literal["str", "int", "float", "dir", "file"]
Default = str | int | float | bool | None
F = TypeVar("F", bound=Callable[..., Any])

# `run -j N`: the stacks side by side; pytest-xdist's own flags for the same (pytest users).
JOBS_FLAGS = ("-j", "--jobs")
XDIST_FLAGS = ("-n", "--numprocesses")


@dataclass(frozen=True)
class Option:
    pytest_flag: str  # harness.front.plugin's option, and what `run` hands the value on as
    help: str  # one sentence; click shows the default itself, pytest gets "(default X)"
    cli_flag: str | None = None  # the CLI's own name, when shorter; the pytest flag works too
    name: str | None = None  # the value's Python name, when not the CLI name's (--workers: workers)
    commands: frozenset[Command] = frozenset({"up", "run"})
    kind: Kind = "value"
    type: ValueType = "str"
    default: Default = None
    choices: tuple[str, ...] | None = None
    minimum: int | None = None
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The value's Python name: a parameter of the click command, a field of ChaosOptions."""
        return self.name or self.flags[0].removeprefix("--").replace("-", "_")

    @property
    def flags(self) -> tuple[str, ...]:
        """Every spelling the CLI accepts (its own name first)."""
        if self.cli_flag is None or self.cli_flag == self.pytest_flag:
            return (self.pytest_flag,)
        return (self.cli_flag, self.pytest_flag)

    def pytest_args(self, value: Any) -> list[str]:
        """How `run` hands a value on to pytest: nothing when it is the default."""
        if self.kind == "flag":
            return [self.pytest_flag] if value else []
        if self.kind == "multiple":
            return [f"{self.pytest_flag}={item}" for item in value or ()]
        if value is None or value == self.default:
            return []
        return [f"{self.pytest_flag}={value}"]

    def typed(self, value: Any) -> Any:
        """A value as ChaosOptions holds it, read by click or pytest (None: the default)."""
        path = self.type in ("dir", "file")
        if self.kind == "multiple":
            return tuple(Path(item) if path else item for item in value or ())
        if value is None or (path and value == ""):  # `--chaos-workflows=`: not given
            return False if self.kind == "flag" else self.default
        return Path(value) if path else value

    # -- renderings ----------------------------------------------------------------------
    def add_to_pytest(self, group: pytest.OptionGroup) -> None:
        if self.kind == "flag":
            group.addoption(self.pytest_flag, action="store_true", default=False, help=self.help)
            return
        extra: dict[str, Any] = {}
        if self.kind == "multiple":
            extra["action"] = "append"
        elif self.type in ("int", "float"):
            extra["type"] = int if self.type == "int" else float
        if self.choices is not None:
            extra["choices"] = self.choices
        shown = f" (default {self.default})" if self.default is not None else ""
        group.addoption(
            self.pytest_flag,
            default=self.default,
            metavar=self.metavar,
            help=self.help + shown,
            **extra,
        )

    def click_decorator(self) -> Callable[[F], F]:
        import click

        if self.kind == "flag":
            return click.option(*self.flags, self.dest, is_flag=True, help=self.help)
        return click.option(
            *self.flags,
            self.dest,
            type=self._click_type(),
            default=self.default,
            show_default=self.default is not None,
            multiple=self.kind == "multiple",
            metavar=self.metavar,
            help=self.help,
        )

    def _click_type(self) -> click.ParamType[Any]:
        import click

        if self.choices is not None:
            return click.Choice(self.choices)
        if self.type == "dir":
            return click.Path(file_okay=False, path_type=Path)
        if self.type == "file":
            return click.Path(dir_okay=False, path_type=Path)
        if self.type == "int":
            return click.IntRange(min=self.minimum) if self.minimum is not None else click.INT
        return click.FLOAT if self.type == "float" else click.STRING


RUN_ONLY: frozenset[Command] = frozenset({"run"})

OPTIONS: tuple[Option, ...] = (
    # -- the stack's shape (StackConfig; a live `up` stack is attached when they match) --
    Option(
        "--n8n-version",
        f"n8n version of the stack (tested: {', '.join(SUPPORTED_N8N_VERSIONS)}).",
        commands=frozenset({"install", "up", "run"}),
        default=DEFAULT_N8N_VERSION,
    ),
    Option(
        "--n8n-workers",
        "Number of n8n workers in the stack.",
        cli_flag="--workers",
        type="int",
        default=2,
        minimum=1,
    ),
    Option(
        "--n8n-webhook-processor",
        "Also run `n8n webhook`; production webhooks then go to it.",
        cli_flag="--webhook-processor",
        kind="flag",
    ),
    Option(
        "--n8n-timings",
        "n8n's lock, renew and stall settings: fast (lock 5 s, renew 2 s, stall check 5 s) or "
        "default (n8n's shipped 60 s, 10 s, 30 s); a finding about stalls holds under the one "
        "it ran with.",
        commands=frozenset({"up", "run", "findings"}),
        default="fast",
        metavar="fast|default",
    ),
    Option(
        "--n8n-ready-timeout",
        "Seconds each part may take to become ready.",
        cli_flag="--ready-timeout",
        type="float",
        default=180.0,
    ),
    Option(
        "--n8n-fresh-db",
        "Migrate a fresh n8n database instead of copying the cached migrated template.",
        cli_flag="--fresh-db",
        kind="flag",
    ),
    Option(
        "--backend",
        "native: the parts as child processes; compose: as containers (needs "
        "scripts/docker-setup.sh).",
        default="native",
        choices=("native", "compose"),
    ),
    Option(
        "--n8n-image",
        "With --backend compose: run this n8n image (e.g. your own, with community nodes) "
        "instead of the locally built one.",
        metavar="IMAGE",
    ),
    # -- what runs, and where its evidence goes -------------------------------------------
    Option(
        "--chaos-workflows",
        "Folder of workflows under test, one sub-folder each with manifest.json "
        "(default: the bundled workflows_under_test).",
        cli_flag="--workflows",
        name="workflows_dir",
        commands=frozenset({"list", "run", "up"}),
        type="dir",
        metavar="DIR",
    ),
    Option(
        "--n8n-runs-dir",
        "Where run folders (logs, evidence) go, and where a live `up` stack is looked for "
        "(default: N8N_CHAOS_RUNS, else ./.n8n-chaos/runs).",
        cli_flag="--runs-dir",
        commands=RUN_ONLY,
        type="dir",
        metavar="DIR",
    ),
    Option(
        "--shard",
        "Run only shard I of N of the selected tests (stable split; one CI machine each).",
        commands=RUN_ONLY,
        metavar="I/N",
    ),
    Option(
        "--shard-timings",
        "timings.json of an earlier run: balance --shard by measured cost (default: by a "
        "hash of each case id). Repeatable.",
        commands=RUN_ONLY,
        kind="multiple",
        type="file",
        metavar="FILE",
    ),
    Option(
        "--chaos-repeat",
        "Run every case N times (ids end in -r1..-rN).",
        cli_flag="--repeat",
        commands=RUN_ONLY,
        type="int",
        minimum=1,
        metavar="N",
    ),
    Option(
        "--chaos-harness-retries",
        "Run a case again, up to N times, when its fault did not land (NO-EVIDENCE, a "
        "harness error, never a pass); each try's evidence stays in cases/<id>.try<k> "
        "(0: never).",
        cli_flag="--harness-retries",
        commands=RUN_ONLY,
        type="int",
        # Two: on a loaded 2-core machine a case starved twice in a row (a CI rehearsal).
        default=2,
        minimum=0,
        metavar="N",
    ),
    Option(
        "--chaos-alone",
        "Run every case with the stack to itself (by default the cases that touch no "
        "process or link run up to 4 at once beside each other: harness.engine.batch).",
        cli_flag="--alone",
        commands=RUN_ONLY,
        kind="flag",
    ),
    # -- the warm stack of `n8n-chaos up` (harness.front.attach) -----------------------------
    Option(
        "--n8n-attach",
        "Use the warm stack `n8n-chaos up` runs in RUN_DIR. By default the newest live one "
        "under the runs folder is used when it has this run's options; with several stacks "
        "(-j/-n) only the first attaches, the others start their own.",
        cli_flag="--attach",
        name="attach_dir",
        commands=RUN_ONLY,
        type="dir",
        metavar="RUN_DIR",
    ),
    Option(
        "--n8n-no-attach",
        "Start a fresh stack even when `n8n-chaos up` runs one.",
        cli_flag="--no-attach",
        commands=RUN_ONLY,
        kind="flag",
    ),
)

BY_DEST = {option.dest: option for option in OPTIONS}


def for_command(command: Command) -> tuple[Option, ...]:
    return tuple(option for option in OPTIONS if command in option.commands)


def click_options(command: Command) -> Callable[[F], F]:
    """A decorator adding the command's declared options, in declaration order."""

    def decorate(function: F) -> F:
        for option in reversed(for_command(command)):
            function = option.click_decorator()(function)
        return function

    return decorate


def add_pytest_options(group: pytest.OptionGroup) -> None:
    for option in OPTIONS:
        option.add_to_pytest(group)


@dataclass(frozen=True)
class ChaosOptions:
    """A run's options, parsed once: one field per declaration (by its dest), typed; a path
    is a Path and a repeatable option a tuple, whether click or pytest read them."""

    n8n_version: str
    workers: int
    webhook_processor: bool
    n8n_timings: str
    ready_timeout: float
    fresh_db: bool
    backend: Literal["native", "compose"]
    n8n_image: str | None
    workflows_dir: Path | None
    runs_dir: Path | None
    shard: str | None
    shard_timings: tuple[Path, ...]
    repeat: int | None
    harness_retries: int
    alone: bool
    attach_dir: Path | None
    no_attach: bool
    # Not declared here: allure's and pytest-xdist's own, read along for the plugin.
    alluredir: str | None = None
    numprocesses: int | None = None
    dist: str = "no"

    @classmethod
    def of(cls, values: Mapping[str, Any], **others: Any) -> ChaosOptions:
        """From values by dest (a command's click parameters); a missing one is its default."""
        return cls(**{o.dest: o.typed(values.get(o.dest)) for o in OPTIONS}, **others)

    @classmethod
    def of_pytest(cls, config: pytest.Config) -> ChaosOptions:
        """From pytest's command line: the one place that reads the options back by flag."""
        read = config.getoption
        return cls.of(
            {o.dest: read(o.pytest_flag) for o in OPTIONS},
            alluredir=read("--alluredir", default=None),
            numprocesses=read("numprocesses", default=None),
            dist=read("dist", default="no"),
        )

    @property
    def workflows(self) -> Path:
        from harness.workflow.manifest import BUNDLED_WORKFLOWS

        return self.workflows_dir or BUNDLED_WORKFLOWS

    def stack_config(self, **given: Any) -> StackConfig:
        """The stack these options shape, with the workflows' $env and $vars (``given``:
        what no option says, e.g. run_dir; its n8n_env goes over the workflows')."""
        from harness.stack.stack import StackConfig
        from harness.workflow.manifest import workflows_env

        env, variables = workflows_env(self.workflows)
        return StackConfig(
            workers=self.workers,
            webhook_processor=self.webhook_processor,
            n8n_version=self.n8n_version,
            n8n_timings=self.n8n_timings,
            ready_timeout_s=self.ready_timeout,
            db_template=not self.fresh_db,
            backend=self.backend,
            n8n_image=self.n8n_image,
            runs_root=self.runs_dir,
            n8n_env={**env, **given.pop("n8n_env", {})},
            variables=variables,
            **given,
        )

    def pytest_args(self) -> list[str]:
        """How `run` hands its options on to pytest, each by its declared flag."""
        return [arg for o in OPTIONS for arg in o.pytest_args(getattr(self, o.dest))]
