"""What every command shares: the console, and how a harness error or a warning is shown."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.markup import escape

from harness.errors import HarnessError
from harness.front.options import F
from harness.stack.install import Installer

# soft_wrap: an error stays one line (no wrapping at 80 columns when stderr is not a tty).
# Made at import: the warm runner imports harness.front.cli only once it has the client's terminal.
console = Console(stderr=True, highlight=False, soft_wrap=True)


# `-k`, said once for `run` and `list`: the same selection, read as pytest reads it.
keyword_option = click.option(
    "-k",
    "keyword",
    default=None,
    metavar="EXPR",
    help="Only the cases whose id matches, e.g. -k 'payment_naive and worker_kill' "
    "(pytest's -k expression).",
)


def folder_option(*names: str, **more: Any) -> Callable[[F], F]:
    """An option naming a folder, read as a Path (None when not given and no default)."""
    more.setdefault("default", None)
    return click.option(*names, type=click.Path(file_okay=False, path_type=Path), **more)


def installer(n8n_version: str) -> Installer:
    def progress(part: str, message: str) -> None:
        console.print(f"[bold]install[/] {part}: {message}")

    return Installer(n8n_version=n8n_version, progress=progress)


def fail(exc: HarnessError) -> NoReturn:
    console.print(f"[bold red]error:[/] {escape(str(exc))}")
    sys.exit(2)


def warn(line: str) -> None:
    console.print(f"[bold yellow]warning:[/] {escape(line)}")


def pairs(items: tuple[str, ...], flag: str) -> dict[str, str]:
    """KEY=VALUE options (repeatable) as a dict."""
    found = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=flag)
        found[key] = value
    return found
