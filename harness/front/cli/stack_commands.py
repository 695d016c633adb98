"""`install`, `up` and `down`: the real parts in the cache, a stack kept running, stopped."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from harness.errors import HarnessError
from harness.front.cli.common import console, fail, installer, pairs
from harness.front.options import ChaosOptions, click_options
from harness.stack.provider import ProviderSettings
from harness.stack.run import default_runs_root
from harness.stack.stack import Stack

if TYPE_CHECKING:
    from harness.front.attach import Serving


@click.command()
@click_options("install")
@click.option(
    "--template/--no-template",
    default=True,
    show_default=True,
    help="Also make the migrated n8n database that stacks start from (once per version).",
)
def install(n8n_version: str, template: bool) -> None:
    """Install pinned versions of every part into the cache (a no-op when cached)."""
    from harness.stack.template import ensure as ensure_template

    started = time.monotonic()
    try:
        inst = installer(n8n_version).install()
        if template:
            ensure_template(inst, lambda m: console.print(f"[bold]install[/] template: {m}"))
    except HarnessError as exc:
        fail(exc)
    console.print(
        f"ready in {time.monotonic() - started:.1f} s: n8n {inst.n8n_version} at {inst.n8n_bin}"
    )


@click.command()
@click_options("up")
@click.option(
    "--upstream",
    "upstreams",
    multiple=True,
    metavar="NAME=HOST:PORT",
    help="An HTTP service workflows call, proxied per worker; workflows read its "
    "address from $env.N8N_CHAOS_UPSTREAM_<NAME>. Repeatable.",
)
@click.option(
    "--n8n-env",
    "n8n_env",
    multiple=True,
    metavar="VAR=VALUE",
    help="Set or override an n8n environment variable. Repeatable.",
)
@click.option(
    "--port",
    "main_port",
    type=int,
    default=None,
    help="Fixed port for n8n main (default: a free one).",
)
@click.option(
    "--provider/--no-provider",
    "with_provider",
    default=True,
    show_default=True,
    help="Run the fake payment provider as upstream 'provider'.",
)
@click.option(
    "--provider-key-ttl",
    type=float,
    default=24 * 3600.0,
    show_default=True,
    help="Seconds the provider keeps a completed idempotency key.",
)
@click.option(
    "--keep", is_flag=True, help="On a failed start, leave the run's data for inspection."
)
def up(
    upstreams: tuple[str, ...],
    n8n_env: tuple[str, ...],
    main_port: int | None,
    with_provider: bool,
    provider_key_ttl: float,
    keep: bool,
    **values: Any,
) -> None:
    """Start a stack and keep it running until Ctrl-C or `n8n-chaos down`.

    `n8n-chaos run` from this folder then attaches to it (one case costs its own time plus
    under a second: `up` keeps a warm runner with pytest and the harness imported, and each
    run is forked from it); see README, "One case at your desk".
    """
    try:
        # Shaped as a run's own stack is, with the $env and $vars of the workflows it will run.
        config = ChaosOptions.of(values).stack_config(
            upstreams=pairs(upstreams, "--upstream"),
            n8n_env=pairs(n8n_env, "--n8n-env"),
            main_port=main_port,
            provider=ProviderSettings(key_ttl_s=provider_key_ttl) if with_provider else None,
            editor=True,  # a person may open it
        )
        config.validate()  # bad input: one line before anything is installed or started
        inst = installer(config.n8n_version).install()
        with console.status("starting the stack") as status:
            stack = Stack.start(
                inst, config, progress=lambda m: status.update(m), keep_on_failure=keep
            )
    except HarnessError as exc:
        kept: Stack | None = getattr(exc, "stack", None)
        if kept is None:
            fail(exc)
        console.print(f"[bold red]error:[/] {exc}")
        console.print(
            f"[yellow]--keep: what started stays up; logs in {kept.run.run_dir}; "
            "Ctrl-C or `n8n-chaos down` ends it[/]"
        )
        stack = kept
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    info = stack.describe()
    console.print_json(json.dumps(info))
    served = _serve_attach(stack)
    if "total" in info["timings_s"]:
        console.print(
            f"[green]stack up[/] in {info['timings_s']['total']} s; Ctrl-C or "
            "`n8n-chaos down` to stop"
        )
    stopping.wait()
    console.print("stopping ...")
    if served is not None:
        served.close()
    stack.stop()
    console.print("stopped; logs kept in " + str(stack.run.run_dir))


def _serve_attach(stack: Stack) -> Serving | None:
    """Let `run` and pytest from this folder use the stack (harness.front.attach)."""
    from harness.front.attach import how_to_attach, serve

    try:
        served = serve(stack)
    except HarnessError as exc:
        console.print(f"[yellow]runs cannot attach to this stack: {escape(str(exc))}[/]")
        return None
    console.print(how_to_attach(stack.run.run_dir))
    if served.runner_error is not None:
        console.print(
            f"[yellow]no warm runner ({escape(served.runner_error)}): each run pays its own "
            "start-up[/]"
        )
    return served


@click.command()
@click.option("--timeout", default=60.0, show_default=True, help="Seconds to wait per stack.")
def down(timeout: float) -> None:
    """Stop every stack that `up` started from this directory's run folder."""
    root = default_runs_root()
    # <runs>/<run id>/stack.json, or <runs>/<invocation>/<gwN>/stack.json under pytest -n.
    states = (
        sorted(
            path
            for pattern in ("*/stack.json", "*/*/stack.json")
            for path in root.glob(pattern)
            if not path.parent.is_symlink() and not path.parent.parent.is_symlink()
        )
        if root.exists()
        else []
    )
    if not states:
        console.print(f"no running stack under {root}")
        return
    for state_file in states:
        state = json.loads(state_file.read_text())
        owner = int(state["owner_pid"])
        console.print(f"stopping run {state['run_id']} (pid {owner})")
        try:
            os.kill(owner, signal.SIGTERM)
        except ProcessLookupError:
            # The owner died without cleaning up: its reaper already swept; remove the file.
            state_file.unlink(missing_ok=True)
            continue
        deadline = time.monotonic() + timeout
        while state_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if state_file.exists():
            console.print(f"[red]run {state['run_id']} did not stop in {timeout:.0f} s[/]")
            sys.exit(1)
