"""Internal: `n8n-chaos` and `python -m harness`: a `run` goes to the warm runner of a live `up`
when there is one (harness.front.warm), everything else to the CLI (harness.front.cli) in this
process."""

from __future__ import annotations

import sys


def main() -> None:
    from harness.front.warm.client import forward

    code = forward(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from harness.front.cli import main as cli_main

    cli_main()
